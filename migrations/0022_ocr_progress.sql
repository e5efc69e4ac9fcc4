-- Issue 32 (OCR): what the worker reading a document is doing now ("OCR page 3 of 12"), shown while it is
-- read; reset when a worker claims it. The OCR confidence per page lives in each chunk's `location` JSON.
ALTER TABLE documents ADD COLUMN progress_note text;
