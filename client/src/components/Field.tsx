import type { InputHTMLAttributes, Ref } from "react";

type Props = InputHTMLAttributes<HTMLInputElement> & {
  id: string;
  label: string;
  hint?: string;
  ref?: Ref<HTMLInputElement>;
};

/** A labelled text input with an optional hint (linked with aria-describedby). */
export function Field({ id, label, hint, className, ...input }: Props) {
  const hintId = hint ? `${id}-hint` : undefined;
  const describedBy = [input["aria-describedby"], hintId].filter(Boolean).join(" ") || undefined;
  return (
    <div className={`field${className ? ` ${className}` : ""}`}>
      <label htmlFor={id}>{label}</label>
      <input id={id} {...input} aria-describedby={describedBy} />
      {hint && (
        <p id={hintId} className="field-hint muted small">
          {hint}
        </p>
      )}
    </div>
  );
}
