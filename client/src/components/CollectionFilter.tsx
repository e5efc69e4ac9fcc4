import { useEffect } from "react";
import { useCollections } from "../collections/CollectionsContext";

interface Props {
  id: string;
  /** A collection id, or "" for everything I may read. */
  value: string;
  onChange: (collectionId: string) => void;
  testId: string;
}

/** A small "Search in: All documents / <collection>" select; hidden while there are no collections. */
export function CollectionFilter({ id, value, onChange, testId }: Props) {
  const { collections } = useCollections();
  const known = !value || !collections || collections.some((c) => c.id === value);
  // The chosen collection went away (deleted, or I left it): back to everything.
  useEffect(() => {
    if (!known) onChange("");
  }, [known, onChange]);
  if (!collections?.length) return null;
  return (
    <div className="collection-filter small">
      <label htmlFor={id} className="muted">
        Search in
      </label>
      <select id={id} value={known ? value : ""} onChange={(e) => onChange(e.target.value)} data-testid={testId}>
        <option value="">All documents</option>
        {collections.map((c) => (
          <option key={c.id} value={c.id}>
            {c.name}
          </option>
        ))}
      </select>
    </div>
  );
}
