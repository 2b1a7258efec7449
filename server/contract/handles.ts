// Handles no one may register: names that would pass for the service or its staff in a contact request, an
// envelope or a ledger line. Operators add their own with --reserved-handles / SVC_RESERVED_HANDLES. Agents that
// already hold one keep it: the list is checked only when a handle is created.

/** The default reserved handles (docs/security.md, docs/auth.md). */
export const DEFAULT_RESERVED_HANDLES: readonly string[] = ["admin", "administrator", "root", "security", "support", "svc", "system"];

/** Whether handle is reserved: on the default list or on the operator's (ServerConfig.reservedHandles). */
export const isReservedHandle = (handle: string, extra: readonly string[] = []): boolean => {
  const h = handle.toLowerCase();
  return DEFAULT_RESERVED_HANDLES.includes(h) || extra.includes(h);
};

/** The operator's list as given to --reserved-handles or SVC_RESERVED_HANDLES: handles separated by commas or spaces. */
export const parseReservedHandles = (v: string | undefined): string[] =>
  (v ?? "")
    .split(/[\s,]+/)
    .map((h) => h.trim().replace(/^@/, "").toLowerCase())
    .filter(Boolean);
