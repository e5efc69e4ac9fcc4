import { forwardRef } from "react";
import type { Chunk } from "../api/types";
import { Link } from "../lib/router";
import { viewerUrl } from "../lib/routes";
import { ChunkTrace } from "../components/ChunkTrace";
import { LocationLabel, mediaFragmentUrl, SourceUrl } from "../components/PassageLocation";
import { ScoreBar } from "../components/ScoreBar";
import { scoreLabel } from "../lib/score";

interface Props {
  index: number; // 1-based citation number
  chunk: Chunk;
  reranked: boolean | null | undefined;
  expanded: boolean;
  flash: boolean;
  onToggle: () => void;
}

export const SourceCard = forwardRef<HTMLLIElement, Props>(function SourceCard(
  { index, chunk, reranked, expanded, flash, onToggle },
  ref,
) {
  const title = chunk.title || chunk.filename;
  return (
    <li
      ref={ref}
      tabIndex={-1}
      className={`source-card${expanded ? " expanded" : ""}${flash ? " flash" : ""}`}
      data-testid="source-card"
      data-index={index}
      data-expanded={expanded}
    >
      <button type="button" className="source-head" aria-expanded={expanded} onClick={onToggle} data-testid="source-card-toggle">
        <span className="source-num">{index}</span>
        <span className="source-title">
          <span className="source-name" data-testid="source-title">
            {title}
          </span>
          <span className="source-meta">
            {chunk.title && chunk.title !== chunk.filename && <span>{chunk.filename}</span>}
            {chunk.page != null && <span data-testid="source-page">p. {chunk.page}</span>}
            {chunk.section && <span>§ {chunk.section}</span>}
            <LocationLabel chunk={chunk} link={false} />
          </span>
        </span>
        <span className="chevron" aria-hidden="true" />
      </button>
      <div className="source-links muted small">
        <Link to={viewerUrl(chunk)} data-testid="source-open">
          Open in document
        </Link>
        {mediaFragmentUrl(chunk) && <LocationLabel chunk={chunk} />}
        <SourceUrl url={chunk.url} />
      </div>
      <ScoreBar score={chunk.score} label={scoreLabel(chunk, reranked)} />
      <p className={`passage${expanded ? "" : " clamped"}`} data-testid="source-passage">
        {chunk.content}
      </p>
      {expanded && <ChunkTrace trace={chunk.trace} />}
    </li>
  );
});
