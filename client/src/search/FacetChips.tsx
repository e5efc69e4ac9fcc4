import type { Facets, MetadataFilters } from "../api/types";

/** Add or remove one value of a key (OR within a key); a key without values goes. */
export function toggleFilter(filters: MetadataFilters, key: string, value: string): MetadataFilters {
  const values = filters[key] ?? [];
  const next = values.includes(value) ? values.filter((v) => v !== value) : [...values, value];
  const out = { ...filters };
  if (next.length) out[key] = next;
  else delete out[key];
  return out;
}

interface Props {
  facets: Facets | undefined;
  filters: MetadataFilters;
  onChange: (filters: MetadataFilters) => void;
}

/**
 * Metadata facets as chips: each value with its document count; a click toggles that value as a filter. The
 * active filters show first, each removable, even when no result carries them any more. The facets themselves
 * are folded away ("Filter by metadata") so the first result stays in view; the server sends the metadata people
 * set or extracted, not what the parsers record about a file (encoding, pages…).
 */
export function FacetChips({ facets, filters, onChange }: Props) {
  const active = Object.entries(filters).flatMap(([key, values]) => values.map((value) => ({ key, value })));
  const groups = Object.entries(facets ?? {}).filter(([, values]) => values.length > 0);
  if (!active.length && !groups.length) return null;
  return (
    <div className="facets" data-testid="facets">
      {active.length > 0 && (
        <div className="facet-active" aria-label="Active filters" role="group">
          {active.map(({ key, value }) => (
            <button
              key={`${key}=${value}`}
              type="button"
              className="chip chip-active"
              onClick={() => onChange(toggleFilter(filters, key, value))}
              aria-label={`Remove filter ${key}: ${value}`}
              data-testid="facet-active"
              data-key={key}
              data-value={value}
            >
              {key}: {value} <span aria-hidden="true">×</span>
            </button>
          ))}
          <button type="button" className="link-button small" onClick={() => onChange({})} data-testid="facet-clear">
            Clear filters
          </button>
        </div>
      )}
      {groups.length > 0 && (
        <details className="facet-more" data-testid="facet-details">
          <summary className="small" data-testid="facets-toggle">
            Filter by metadata <span className="muted">({groups.length} {groups.length === 1 ? "property" : "properties"})</span>
          </summary>
          {groups.map(([key, values]) => (
            <div key={key} className="facet-group" role="group" aria-label={key} data-testid="facet-group" data-key={key}>
              <span className="facet-key muted small">{key}</span>
              {values.map((f) => {
                const on = (filters[key] ?? []).includes(f.value);
                return (
                  <button
                    key={f.value}
                    type="button"
                    className={on ? "chip chip-active" : "chip"}
                    aria-pressed={on}
                    onClick={() => onChange(toggleFilter(filters, key, f.value))}
                    title={`${f.count} ${f.count === 1 ? "document" : "documents"}`}
                    data-testid="facet-chip"
                    data-key={key}
                    data-value={f.value}
                  >
                    {f.value} <span className="muted">{f.count}</span>
                  </button>
                );
              })}
            </div>
          ))}
        </details>
      )}
    </div>
  );
}
