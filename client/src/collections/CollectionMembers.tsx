import { useEffect, useState, type FormEvent } from "react";
import { collectionsApi } from "../api/collections";
import { directoryApi } from "../api/users";
import type { CollectionDetail, MemberRole, UserRef } from "../api/types";
import type { CollectionAct } from "./act";
import { ROLE_TEXT } from "./CollectionsPage";

/** Who the collection is shared with; the owner adds members, changes roles, removes them. */
export function CollectionMembers({ detail, act }: { detail: CollectionDetail; act: CollectionAct }) {
  const isOwner = detail.role === "owner";
  const [users, setUsers] = useState<UserRef[] | null>(null);
  const [userId, setUserId] = useState("");
  const [role, setRole] = useState<MemberRole>("read");

  useEffect(() => {
    if (!isOwner) return;
    const ctrl = new AbortController();
    directoryApi
      .list(ctrl.signal)
      .then(setUsers)
      .catch(() => !ctrl.signal.aborted && setUsers([]));
    return () => ctrl.abort();
  }, [isOwner]);

  // The server lists the owner among the members (role "owner"): shown apart, on the first row.
  const members = detail.members.filter((m) => m.role !== "owner" && m.user.id !== detail.owner.id);
  const taken = new Set([detail.owner.id, ...members.map((m) => m.user.id)]);
  const candidates = (users ?? []).filter((u) => !taken.has(u.id));
  const chosen = candidates.some((u) => u.id === userId) ? userId : "";

  const add = async (e: FormEvent) => {
    e.preventDefault();
    const who = candidates.find((u) => u.id === chosen);
    if (!who) return;
    if (await act(() => collectionsApi.setMember(detail.id, who.id, role), { done: `Shared with ${who.username}.` })) {
      setUserId("");
      setRole("read");
    }
  };

  return (
    <section className="card" aria-labelledby="members-title">
      <h2 id="members-title">People</h2>
      <ul className="plain-list" aria-label="Members">
        <li className="list-row" data-testid="collection-owner-row">
          <span className="list-main">{detail.owner.username}</span>
          <span className="badge role-owner">Owner</span>
        </li>
        {members.map((m) => (
          <li key={m.user.id} className="list-row" data-testid="collection-member-row" data-user-id={m.user.id} data-role={m.role}>
            <span className="list-main">{m.user.username}</span>
            {isOwner ? (
              <div className="row-actions">
                <label htmlFor={`role-${m.user.id}`} className="sr-only">
                  Access for {m.user.username}
                </label>
                <select
                  id={`role-${m.user.id}`}
                  value={m.role}
                  onChange={(e) =>
                    void act(() => collectionsApi.setMember(detail.id, m.user.id, e.target.value as MemberRole), {
                      done: `${m.user.username} now has ${e.target.value} access.`,
                    })
                  }
                  data-testid="collection-member-row-role"
                >
                  <option value="read">Read only</option>
                  <option value="write">Can edit</option>
                </select>
                <button
                  type="button"
                  className="btn btn-small"
                  aria-label={`Remove ${m.user.username}`}
                  onClick={() =>
                    void act(() => collectionsApi.removeMember(detail.id, m.user.id), {
                      done: `Removed ${m.user.username}.`,
                    })
                  }
                  data-testid="collection-member-remove"
                >
                  Remove
                </button>
              </div>
            ) : (
              <span className={`badge role-${m.role}`}>{ROLE_TEXT[m.role] ?? m.role}</span>
            )}
          </li>
        ))}
      </ul>
      {members.length === 0 && <p className="muted small">Not shared with anyone yet.</p>}

      {isOwner && (
        <form className="inline-form" onSubmit={add} aria-label="Share with a user" data-testid="collection-member-form">
          <label htmlFor="member-user" className="sr-only">
            User to share with
          </label>
          <select id="member-user" value={chosen} onChange={(e) => setUserId(e.target.value)} data-testid="collection-member-user">
            <option value="">{users === null ? "Loading users…" : candidates.length ? "Choose a user…" : "No other users"}</option>
            {candidates.map((u) => (
              <option key={u.id} value={u.id}>
                {u.username}
              </option>
            ))}
          </select>
          <label htmlFor="member-role" className="sr-only">
            Access
          </label>
          <select id="member-role" value={role} onChange={(e) => setRole(e.target.value as MemberRole)} data-testid="collection-member-role">
            <option value="read">Read only</option>
            <option value="write">Can edit</option>
          </select>
          <button type="submit" className="btn btn-primary" disabled={!chosen} data-testid="collection-member-add">
            Share
          </button>
        </form>
      )}
    </section>
  );
}
