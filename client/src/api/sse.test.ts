import { describe, expect, it } from "vitest";
import { parseSse, SseParser } from "./sse";

const STREAM =
  'event: thread\ndata: {"thread_id":"t1","message_id":"m1"}\n\n' +
  ": ping\n\n" +
  'event: token\ndata: {"delta":"Hel"}\n\n' +
  'event: token\ndata: {"delta":"lo"}\n\n' +
  'event: done\ndata: {"message_id":"m1","finish_reason":"stop"}\n\n';

describe("SseParser", () => {
  it("parses several events in one chunk and ignores ping comments", () => {
    const events = parseSse(STREAM);
    expect(events.map((e) => e.event)).toEqual(["thread", "token", "token", "done"]);
    expect(JSON.parse(events[1].data)).toEqual({ delta: "Hel" });
  });

  it("gives the same result however the stream is split", () => {
    const whole = parseSse(STREAM);
    for (const size of [1, 2, 3, 7, 13]) {
      const p = new SseParser();
      const got = [];
      for (let i = 0; i < STREAM.length; i += size) got.push(...p.feed(STREAM.slice(i, i + size)));
      got.push(...p.flush());
      expect(got).toEqual(whole);
    }
  });

  it("does not emit an event until its blank line arrives", () => {
    const p = new SseParser();
    expect(p.feed('event: token\ndata: {"delta":"a"}\n')).toEqual([]);
    expect(p.feed("\n")).toEqual([{ event: "token", data: '{"delta":"a"}' }]);
  });

  it("handles \\r\\n line endings, also when split between chunks", () => {
    const text = 'event: token\r\ndata: {"delta":"x"}\r\n\r\n: ping\r\n\r\nevent: done\r\ndata: {}\r\n\r\n';
    expect(parseSse(text).map((e) => e.event)).toEqual(["token", "done"]);
    const p = new SseParser();
    const cut = text.indexOf("\r\n") + 1; // between \r and \n
    const got = [...p.feed(text.slice(0, cut)), ...p.feed(text.slice(cut))];
    expect(got.map((e) => e.event)).toEqual(["token", "done"]);
    expect(got[0].data).toBe('{"delta":"x"}');
  });

  it("handles bare \\r line endings", () => {
    expect(parseSse("event: a\rdata: 1\r\r")).toEqual([{ event: "a", data: "1" }]);
  });

  it("joins multi-line data with newlines", () => {
    const [ev] = parseSse('event: token\ndata: {"delta":\ndata: "hi"}\n\n');
    expect(ev.data).toBe('{"delta":\n"hi"}');
    expect(JSON.parse(ev.data)).toEqual({ delta: "hi" });
  });

  it("strips only one leading space, defaults the event name, and skips unknown fields", () => {
    expect(parseSse("data:  two\nretry: 10\nfoo: bar\n\n")).toEqual([{ event: "message", data: " two" }]);
    expect(parseSse("data:nospace\n\n")[0].data).toBe("nospace");
  });

  it("ignores comment-only blocks and events without data", () => {
    expect(parseSse(": ping\n\n:\n\nevent: lonely\n\n")).toEqual([]);
  });

  it("drops an unterminated trailing event at end of stream", () => {
    expect(parseSse('event: token\ndata: {"delta":"x"}')).toEqual([]);
  });

  it("keeps multi-byte characters intact across chunk boundaries via the decoder", () => {
    const bytes = new TextEncoder().encode('event: token\ndata: {"delta":"héllo ✓"}\n\n');
    const dec = new TextDecoder();
    const p = new SseParser();
    const got = [];
    for (const b of bytes) got.push(...p.feed(dec.decode(new Uint8Array([b]), { stream: true })));
    expect(JSON.parse(got[0].data).delta).toBe("héllo ✓");
  });
});
