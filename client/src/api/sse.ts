/**
 * Minimal incremental Server-Sent Events parser (WHATWG event-stream format).
 *
 * Feed it decoded text in arbitrary pieces; it returns every complete event.
 * Handles \n, \r\n and \r line endings (even when split across chunks),
 * multi-line `data:` fields, comment lines (`: ping`) and unknown fields.
 */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export class SseParser {
  private buffer = "";
  private eventName = "";
  private dataLines: string[] = [];
  private lastId: string | undefined;

  /** Add a chunk of text; returns the events completed by it. */
  feed(chunk: string): SseEvent[] {
    this.buffer += chunk;
    return this.drain(false);
  }

  /** End of stream: process a trailing line. Per spec an unterminated event is dropped. */
  flush(): SseEvent[] {
    const events = this.drain(true);
    this.eventName = "";
    this.dataLines = [];
    return events;
  }

  private drain(final: boolean): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    const buf = this.buffer;
    for (let i = 0; i < buf.length; i++) {
      const ch = buf[i];
      if (ch !== "\n" && ch !== "\r") continue;
      if (ch === "\r") {
        // A trailing \r may be the first half of \r\n: wait for the next chunk.
        if (i === buf.length - 1 && !final) break;
        this.line(buf.slice(start, i), out);
        if (buf[i + 1] === "\n") i++;
      } else {
        this.line(buf.slice(start, i), out);
      }
      start = i + 1;
    }
    this.buffer = buf.slice(start);
    if (final && this.buffer) {
      // Unterminated last line: apply it but do not dispatch (no blank line followed).
      this.line(this.buffer, []);
      this.buffer = "";
    }
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      if (this.dataLines.length > 0) {
        out.push({
          event: this.eventName || "message",
          data: this.dataLines.join("\n"),
          ...(this.lastId !== undefined ? { id: this.lastId } : {}),
        });
      }
      this.eventName = "";
      this.dataLines = [];
      return;
    }
    if (line.startsWith(":")) return; // comment / keep-alive ping
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventName = value;
        break;
      case "data":
        this.dataLines.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      default:
        break; // `retry` and unknown fields are ignored
    }
  }
}

/** Convenience: parse a whole string (tests, fixtures). */
export function parseSse(text: string): SseEvent[] {
  const p = new SseParser();
  return [...p.feed(text), ...p.flush()];
}
