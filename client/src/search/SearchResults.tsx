import type { SearchResponse } from "../api/types";
import { ChunkTrace } from "../components/ChunkTrace";
import { LocationLabel, SourceUrl } from "../components/PassageLocation";
import { ScoreBar } from "../components/ScoreBar";
import { highlight } from "../lib/highlight";
import { plural } from "../lib/format";
import { Link } from "../lib/router";
import { scoreLabel } from "../lib/score";
import { viewerHref } from "../viewer/links";

const where = (page?: number | null, section?: string | null) =>
  [page != null ? `p. ${page}` : null, section ? `§ ${section}` : null].filter(Boolean).join(" · ");

export function ResultsByDocument({ data }: { data: SearchResponse }) {
  return (
    <ol className="results" data-testid="results-by-document">
      {data.documents.map((d) => {
        const c = d.best_chunk;
        return (
          <li key={d.document_id} className="result" data-testid="search-result" data-kind="document" data-document-id={d.document_id}>
            <div className="result-head">
              <div>
                <div className="result-title">
                  <Link to={viewerHref(d.document_id, c?.id, c?.page)} className="result-open" data-testid="result-open">
                    {d.title || d.filename}
                  </Link>
                </div>
                <div className="muted small">
                  {d.title && d.title !== d.filename && <>{d.filename} · </>}
                  {plural(d.matched_chunks, "matching chunk")}
                  {c && where(c.page, c.section) && <> · best match {where(c.page, c.section)}</>}
                  {c?.location?.label && (
                    <>
                      {" · "}
                      <LocationLabel chunk={c} />
                    </>
                  )}
                  {c?.url && (
                    <>
                      {" · "}
                      <SourceUrl url={c.url} />
                    </>
                  )}
                </div>
              </div>
              <ScoreBar score={d.max_score} label={c ? scoreLabel(c, data.reranked) : "Similarity"} />
            </div>
            {c && <p className="passage clamped">{highlight(c.content, data.query)}</p>}
          </li>
        );
      })}
    </ol>
  );
}

export function ResultsByChunk({ data }: { data: SearchResponse }) {
  return (
    <ol className="results" data-testid="results-by-chunk">
      {data.chunks.map((c, i) => (
        <li key={c.id} className="result" data-testid="search-result" data-kind="chunk" data-chunk-id={c.id}>
          <div className="result-head">
            <div>
              <div className="result-title">
                <span className="source-num">{i + 1}</span>{" "}
                <Link to={viewerHref(c.document_id, c.id, c.page)} className="result-open" data-testid="result-open">
                  {c.title || c.filename}
                </Link>
              </div>
              <div className="muted small">
                {[c.title && c.title !== c.filename ? c.filename : null, where(c.page, c.section), `chunk ${c.chunk_index + 1}`]
                  .filter(Boolean)
                  .join(" · ")}
                {c.location?.label && (
                  <>
                    {" · "}
                    <LocationLabel chunk={c} />
                  </>
                )}
                {c.url && (
                  <>
                    {" · "}
                    <SourceUrl url={c.url} />
                  </>
                )}
              </div>
            </div>
            <ScoreBar score={c.score} label={scoreLabel(c, data.reranked)} />
          </div>
          <p className="passage">{highlight(c.content, data.query)}</p>
          <ChunkTrace trace={c.trace} />
        </li>
      ))}
    </ol>
  );
}
