import { useEffect, useId, useRef, useState, type ReactNode } from "react";

interface Props {
  /** The badge's words ("Hybrid", "High confidence (82%)"). */
  children: ReactNode;
  /** What it means, in plain words: shown on hover, focus or tap, and read as the badge's description. */
  explanation: string;
  className: string;
  testId: string;
  /** Extra attributes of the badge (data-label...). */
  data?: Record<`data-${string}`, string | undefined>;
}

/**
 * A badge that explains itself (a "toggletip"): hovering or focusing it shows what it means, a tap or click keeps
 * it shown until the next tap, Escape or a tap elsewhere. The explanation is also the badge's accessible
 * description, so a screen reader says it without opening anything. Never put it inside another button.
 */
export function Explain({ children, explanation, className, testId, data }: Props) {
  const [shown, setShown] = useState<"no" | "hover" | "pinned">("no");
  const id = useId();
  const box = useRef<HTMLSpanElement>(null);

  useEffect(() => {
    if (shown !== "pinned") return;
    const onDown = (e: PointerEvent) => {
      if (!box.current?.contains(e.target as Node)) setShown("no");
    };
    document.addEventListener("pointerdown", onDown);
    return () => document.removeEventListener("pointerdown", onDown);
  }, [shown]);

  return (
    <span
      ref={box}
      className="explain"
      onMouseEnter={() => setShown((s) => (s === "pinned" ? s : "hover"))}
      onMouseLeave={() => setShown((s) => (s === "pinned" ? s : "no"))}
    >
      <button
        type="button"
        className={`${className} explain-button`}
        aria-describedby={id}
        aria-expanded={shown !== "no"}
        data-testid={testId}
        {...data}
        onFocus={() => setShown((s) => (s === "pinned" ? s : "hover"))}
        onBlur={() => setShown("no")}
        onClick={() => setShown((s) => (s === "pinned" ? "no" : "pinned"))}
        onKeyDown={(e) => {
          if (e.key === "Escape" && shown !== "no") {
            e.preventDefault();
            e.stopPropagation();
            setShown("no");
          }
        }}
      >
        {children}
      </button>
      <span id={id} role="tooltip" className="explain-tip" hidden={shown === "no"} data-testid={`${testId}-explained`}>
        {explanation}
      </span>
    </span>
  );
}
