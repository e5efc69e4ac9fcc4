import { useCallback, useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import type { Thread } from "../api/types";
import { Icon } from "../components/Icon";
import { Spinner } from "../components/Spinner";
import { useAuth } from "../auth/AuthContext";
import { CollectionFilter } from "../components/CollectionFilter";
import { draftKey, writeDraft } from "../lib/drafts";
import { Link, navigate } from "../lib/router";
import { Composer } from "./Composer";
import { MessageList } from "./MessageList";
import { ThreadList } from "./ThreadList";
import { useChat } from "./useChat";

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

export function ChatPage({ threadId: routeThreadId }: { threadId: string | null }) {
  const [threads, setThreads] = useState<Thread[]>([]);
  const [threadsError, setThreadsError] = useState<string | null>(null);
  const [menuOpen, setMenuOpen] = useState(false);
  const [collectionId, setCollectionId] = useState("");
  const { user } = useAuth();
  // The thread the page currently shows; lets us ignore our own URL updates.
  const shown = useRef<string | null | undefined>(undefined);

  const refreshThreads = useCallback(() => {
    api
      .listThreads()
      .then((t) => {
        setThreads(t);
        setThreadsError(null);
      })
      .catch((e: unknown) => setThreadsError(`Couldn't load conversations: ${errText(e)}`));
  }, []);

  const chat = useChat({
    onThreadCreated: (id) => {
      shown.current = id;
      navigate(`/chat/${encodeURIComponent(id)}`, { replace: true });
      refreshThreads();
    },
    onSettled: refreshThreads,
  });
  const { load, reset } = chat;

  useEffect(refreshThreads, [refreshThreads]);

  // Escape closes the off-canvas thread list on small screens.
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setMenuOpen(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [menuOpen]);

  useEffect(() => {
    if (routeThreadId === shown.current) return;
    shown.current = routeThreadId;
    setMenuOpen(false);
    if (routeThreadId) void load(routeThreadId);
    else reset();
  }, [routeThreadId, load, reset]);

  const onRename = async (id: string, title: string) => {
    try {
      const t = await api.renameThread(id, title);
      setThreads((ts) => ts.map((x) => (x.id === id ? { ...x, ...t } : x)));
      setThreadsError(null);
    } catch (e) {
      setThreadsError(`Rename failed: ${errText(e)}`);
      throw e;
    }
  };

  const onDelete = async (id: string) => {
    try {
      await api.deleteThread(id);
      setThreads((ts) => ts.filter((x) => x.id !== id));
      setThreadsError(null);
      if (id === chat.state.threadId || id === routeThreadId) navigate("/");
    } catch (e) {
      setThreadsError(`Delete failed: ${errText(e)}`);
    }
  };

  const activeId = chat.state.threadId ?? routeThreadId;
  const activeTitle = threads.find((t) => t.id === activeId)?.title;
  const { messages, sending } = chat.state;
  const composerKey = draftKey(user?.id, activeId);

  const onSend = (text: string) => {
    const key = composerKey;
    void chat.send(text, { collectionIds: collectionId ? [collectionId] : undefined }).then((outcome) => {
      // The session ended before the server took the message: keep it for after the next login.
      if (outcome === "unauthorized") writeDraft(key, text);
    });
  };

  return (
    <div className={`chat-layout${menuOpen ? " menu-open" : ""}`}>
      <aside className="sidebar" id="chat-sidebar" aria-label="Conversations" data-testid="sidebar">
        <ThreadList
          threads={threads}
          activeId={activeId}
          error={threadsError}
          onNew={() => {
            setMenuOpen(false);
            if (routeThreadId) navigate("/");
            else reset();
          }}
          onSelect={(id) => {
            setMenuOpen(false);
            navigate(`/chat/${encodeURIComponent(id)}`);
          }}
          onRename={onRename}
          onDelete={onDelete}
        />
      </aside>
      {menuOpen && <div className="backdrop" onClick={() => setMenuOpen(false)} aria-hidden="true" />}
      <section className="chat-main" aria-label="Chat">
        <header className="chat-header">
          <button
            type="button"
            className="icon-button menu-button"
            aria-label="Conversations"
            aria-controls="chat-sidebar"
            aria-expanded={menuOpen}
            onClick={() => setMenuOpen((o) => !o)}
            data-testid="menu-button"
          >
            <Icon name="menu" size={20} />
          </button>
          <h1 className="chat-title" data-testid="chat-title">
            {activeId ? activeTitle || "Conversation" : "New chat"}
          </h1>
        </header>
        {chat.loadError ? (
          <div className="center-state">
            <div className="error-box" role="alert" data-testid="error-box" data-code="load_failed">
              <div className="error-text">{chat.loadError}</div>
            </div>
            <Link to="/" className="btn">
              Start a new chat
            </Link>
          </div>
        ) : chat.loading ? (
          <div className="center-state">
            <Spinner label="Loading conversation" />
          </div>
        ) : messages.length === 0 ? (
          <EmptyChat />
        ) : (
          <MessageList messages={messages} sending={sending} onRetry={chat.retry} />
        )}
        <Composer
          sending={sending}
          onSend={onSend}
          onStop={chat.stop}
          autoFocus
          draftKey={composerKey}
          options={
            <CollectionFilter id="chat-collection" value={collectionId} onChange={setCollectionId} testId="chat-collection" />
          }
        />
      </section>
    </div>
  );
}

function EmptyChat() {
  return (
    <div className="center-state empty-chat" data-testid="empty-chat">
      <h2>Chat with your documents</h2>
      <p className="muted">
        Ask a question and ragchat searches your uploaded files, then answers with numbered citations you can click to
        see the source passage.
      </p>
      <p className="muted small">
        No documents yet? <Link to="/documents">Upload some</Link> · Want raw results? Try{" "}
        <Link to="/search">Search</Link>.
      </p>
    </div>
  );
}
