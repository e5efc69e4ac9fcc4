/** A load failure with a Retry button (lists of documents, collections). */
export function RetryError({ message, onRetry }: { message: string; onRetry: () => void }) {
  return (
    <div className="error-box" role="alert" data-testid="error-box">
      <div className="error-text">{message}</div>
      <button type="button" className="btn btn-small" onClick={onRetry}>
        Retry
      </button>
    </div>
  );
}
