import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import "./chat.css";
import type { Rating } from "../api/feedback";
import { threadsApi, type ThreadSettings } from "../api/threads";
import { errorMessage } from "../api/client";
import { Icon } from "../components/Icon";
import { Spinner } from "../components/Spinner";
import { useAuth } from "../auth/AuthContext";
import { draftKey, writeDraft } from "../lib/drafts";
import { requestHealthCheck, useHealth } from "../lib/health";
import { useTitle } from "../lib/useTitle";
import { Link, navigate, useLocation } from "../lib/router";
import { rememberedThread, rememberThread } from "./channel";
import { ChatControls } from "./ChatControls";
import { Composer } from "./Composer";
import { EmptyChat } from "./EmptyChat";
import { ExportMenu } from "./ExportMenu";
import { MessageList } from "./MessageList";
import { ThreadList } from "./ThreadList";
import { useChat } from "./useChat";
import { useThreads } from "./useThreads";

const DEFAULT_MAX_CHARS = 8000;
const TITLE_LOOKS_MS = [1500, 4000, 10000];
const hasSettings = (s: ThreadSettings) =>
  !!(s.document_ids?.length || s.collection_ids?.length || s.search_mode || s.rerank != null || s.model || s.documents_only != null);

export function ChatPage({ threadId: routeThreadId }: { threadId: string | null }) {
  const [menuOpen, setMenuOpen] = useState(false);
  const { search } = useLocation();
  // /chat?document=<id>&task=summarize (the Summarise action) or /chat?documents=<a>,<b>&task=compare (Compare on the
  // Documents page): asked once, as soon as the page opens
  const askDocuments = (search.get("documents") ?? search.get("document") ?? "").split(",").filter(Boolean).slice(0, 4);
  const askDocument = askDocuments.length ? askDocuments.join(",") : null;
  const wanted = search.get("task");
  const askTask =
    wanted === "compare" && askDocuments.length >= 2 ? "compare" : wanted === "summarize" && askDocuments.length ? "summarize" : null;
  const taskSent = useRef<string | null>(null);
  const [settings, setSettings] = useState<ThreadSettings>(() => (askDocuments.length ? { document_ids: askDocuments } : {}));
  const settingsFor = useRef<string | null>(null);
  const { user } = useAuth();
  const health = useHealth();

  // The thread the page currently shows; lets us ignore our own URL updates.
  const shown = useRef<string | null | undefined>(undefined);
  const settingsRef = useRef(settings);
  settingsRef.current = settings;

  const onAnswerNews = useCallback((id: string) => chatRef.current?.otherTabNews(id), []);
  const list = useThreads(onAnswerNews);
  const { threads, refresh: refreshThreads } = list;

  // A new thread's title is generated after its first answer (server side, in the background): look again.
  const titling = useRef<string | null>(null);
  const timers = useRef<number[]>([]);
  useEffect(() => () => timers.current.forEach((t) => window.clearTimeout(t)), []);
  const onSettled = () => {
    refreshThreads();
    // An answer came while the banner says chat is unavailable (or the server unreachable): look again now.
    if (!health?.llm?.reachable || !health.llm.model_available) requestHealthCheck();
    if (!titling.current) return;
    titling.current = null;
    timers.current = TITLE_LOOKS_MS.map((ms) => window.setTimeout(refreshThreads, ms));
  };

  const chat = useChat({
    onThreadCreated: (id) => {
      titling.current = id;
      shown.current = id;
      settingsFor.current = id;
      rememberThread(id);
      navigate(`/chat/${encodeURIComponent(id)}`, { replace: true });
      refreshThreads();
      if (hasSettings(settingsRef.current)) void threadsApi.saveSettings(id, settingsRef.current).catch(() => undefined);
    },
    onSettled,
    onScopeGone: (kind, ids) => {
      const key = kind === "document" ? "document_ids" : "collection_ids";
      const gone = new Set(ids);
      const kept = (settingsRef.current[key] ?? []).filter((id) => !gone.has(id));
      changeSettingsRef.current({ ...settingsRef.current, [key]: kept.length ? kept : null });
    },
  });
  // The limit from /api/health when it says; else as a refusal named it; else the default.
  const maxChars =
    health?.chat_max_message_chars ?? chat.limit ?? DEFAULT_MAX_CHARS;
  const chatRef = useRef(chat);
  chatRef.current = chat;
  const { load, reset } = chat;
  const { messages, sending } = chat.state;
  const activeId = chat.state.threadId ?? routeThreadId;
  const activeThread = threads.find((t) => t.id === activeId);
  const title = activeId ? activeThread?.title || "Conversation" : "New chat";

  // Coming back to Chat (the nav's "/") opens the thread this tab showed last.
  useEffect(() => {
    if (routeThreadId || askDocument || shown.current !== undefined) return;
    const last = rememberedThread();
    if (last) navigate(`/chat/${encodeURIComponent(last)}`, { replace: true });
  }, [routeThreadId, askDocument]);

  useEffect(() => {
    if (routeThreadId === shown.current) return;
    if (!routeThreadId && shown.current === undefined && !askDocument && rememberedThread()) return; // redirecting
    shown.current = routeThreadId;
    setMenuOpen(false);
    rememberThread(routeThreadId);
    if (routeThreadId) void load(routeThreadId);
    else {
      reset();
      settingsFor.current = null;
      setSettings(askDocument ? { document_ids: [askDocument] } : {});
    }
  }, [routeThreadId, askDocument, load, reset]);

  // A thread's saved settings, once its row is known (not again: local changes win until saved).
  useEffect(() => {
    if (!activeId || settingsFor.current === activeId || !activeThread) return;
    settingsFor.current = activeId;
    setSettings(activeThread.settings ?? {});
  }, [activeId, activeThread]);

  useTitle(title);

  // Escape stops the answer (popovers and menus handle their own Escape first); it also closes the menu.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      if (menuOpen) setMenuOpen(false);
      else if (chatRef.current.state.sending) void chatRef.current.stop();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [menuOpen]);

  const changeSettingsRef = useRef<(next: ThreadSettings) => void>(() => undefined);
  const changeSettings = (next: ThreadSettings) => {
    setSettings(next);
    if (activeId)
      threadsApi.saveSettings(activeId, next).catch((e: unknown) => chat.setNotice(`Couldn't save the settings: ${errorMessage(e)}`));
  };

  changeSettingsRef.current = changeSettings;

  const onDelete = async (id: string) => {
    if ((await list.remove(id)) && (id === chat.state.threadId || id === routeThreadId)) {
      rememberThread(null);
      navigate("/chat");
    }
  };

  useEffect(() => {
    if (!askTask || !askDocument || routeThreadId || taskSent.current === askDocument) return;
    taskSent.current = askDocument;
    const ids = askDocument.split(",");
    const question = askTask === "compare" ? "Compare these documents." : "Summarise this document.";
    void chatRef.current.send(question, { document_ids: ids }, askTask);
  }, [askTask, askDocument, routeThreadId]);

  const composerKey = draftKey(user?.id, activeId);
  const onSend = async (text: string) => {
    const key = composerKey;
    const outcome = await chat.send(text, settings);
    // The session ended before the server took the message: keep it for after the next login.
    if (outcome === "unauthorized") writeDraft(key, text);
    return outcome === "sent";
  };
  // Stable across renders (through refs), so that the messages not streaming are not rendered again per token.
  const handlers = useMemo(
    () => ({
      onRegenerate: (id: string) => void chatRef.current.regenerate(id, settingsRef.current),
      onContinue: (id: string) => void chatRef.current.continueAnswer(id, settingsRef.current),
      onEdit: async (id: string, text: string) => (await chatRef.current.edit(id, text, settingsRef.current)) === "sent",
      onBranch: (id: string) => void chatRef.current.branch(id),
      onRate: (id: string, rating: Rating | null, note: string | null) => chatRef.current.rate(id, rating, note),
      onWiden: (id: string) => {
        const wide = { ...settingsRef.current, document_ids: null, collection_ids: null };
        changeSettingsRef.current(wide);
        void chatRef.current.regenerate(id, wide);
      },
    }),
    [],
  );

  return (
    <div className={`chat-layout${menuOpen ? " menu-open" : ""}`}>
      <aside className="sidebar" id="chat-sidebar" aria-label="Conversations" data-testid="sidebar">
        <ThreadList
          threads={threads}
          activeId={activeId}
          error={list.error}
          onNew={() => {
            setMenuOpen(false);
            rememberThread(null);
            if (routeThreadId || askDocument) navigate("/chat");
            else {
              reset();
              setSettings({});
            }
            // A new chat is for typing: the message box takes the focus (after the route change renders).
            window.setTimeout(() => document.getElementById("composer-input")?.focus(), 0);
          }}
          onSelect={(id) => {
            setMenuOpen(false);
            navigate(`/chat/${encodeURIComponent(id)}`);
          }}
          onRename={list.rename}
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
          <h1 className="chat-title" data-testid="chat-title" title={title}>
            {title}
          </h1>
          {activeId && messages.length > 0 && <ExportMenu threadId={activeId} />}
        </header>
        <div className="sr-only" aria-live="polite" data-testid="chat-live">
          {chat.live}
        </div>
        {chat.loadError ? (
          <div className="center-state">
            <div className="error-box" role="alert" data-testid="error-box" data-code="load_failed">
              <div className="error-text">{chat.loadError}</div>
            </div>
            <Link to="/chat" className="btn" onClick={() => rememberThread(null)}>
              Start a new chat
            </Link>
          </div>
        ) : chat.loading ? (
          <div className="center-state">
            <Spinner label="Loading conversation" />
          </div>
        ) : messages.length === 0 ? (
          <EmptyChat onAsk={(q) => void onSend(q)} />
        ) : (
          <MessageList
            messages={messages}
            sending={sending}
            onRetry={chat.retry}
            scoped={!!(settings.document_ids?.length || settings.collection_ids?.length)}
            {...handlers}
          />
        )}
        <Composer
          sending={sending}
          onSend={onSend}
          onStop={() => void chat.stop()}
          autoFocus
          draftKey={composerKey}
          maxChars={maxChars}
          notice={chat.notice}
          controls={<ChatControls settings={settings} onChange={changeSettings} />}
        />
      </section>
    </div>
  );
}
