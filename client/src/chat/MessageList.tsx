import { useEffect, useRef } from "react";
import type { ChatMessage } from "./state";
import { MessageItem } from "./MessageItem";
import type { MessageHandlers } from "./MessageActions";

interface Props extends MessageHandlers {
  messages: ChatMessage[];
  sending: boolean;
  onRetry: (assistantKey: string) => void;
  scoped?: boolean;
}

/** Scrolls to the bottom while new content arrives, unless the reader scrolled up. */
export function MessageList({ messages, sending, onRetry, scoped = false, ...handlers }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const last = messages[messages.length - 1];
  const signature = `${messages.length}:${last?.content.length ?? 0}:${last?.searches.length ?? 0}:${last?.status}`;

  useEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [signature]);

  const onScroll = () => {
    const el = box.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  return (
    <div className="messages-scroll" ref={box} onScroll={onScroll}>
      <ol className="messages" data-testid="message-list" aria-busy={sending}>
        {messages.map((m, i) => (
          <MessageItem
            key={m.key}
            message={m}
            onRetry={onRetry}
            canRetry={!sending && i === messages.length - 1}
            running={sending}
            scoped={scoped}
            {...handlers}
          />
        ))}
      </ol>
    </div>
  );
}
