// "Did you mean ...?" for a mistyped tool or field name.

/** Edits (insert, delete, replace, swap two neighbours) that turn a into b. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The names closest to a mistyped one: those containing it or contained in it (balances: get_balances; group:
 * group_id), else those within a third of its length in edits, the nearest first.
 */
export function closest(word: string, names: readonly string[], max = 3): string[] {
  const w = word.toLowerCase();
  const within = names.filter((n) => n.length > 1 && (n.includes(w) || (w.length > 2 && w.includes(n))));
  if (within.length) return within.slice(0, max);
  const limit = Math.max(1, Math.floor(w.length / 3));
  return names
    .map((n) => ({ n, d: distance(w, n) }))
    .filter((x) => x.d <= limit)
    .sort((a, b) => a.d - b.d || a.n.localeCompare(b.n))
    .slice(0, max)
    .map((x) => x.n);
}

/** " Did you mean x or y?" (with its leading space), or "" when nothing is close. */
export function didYouMean(word: string, names: readonly string[]): string {
  const near = closest(word, names);
  return near.length ? ` Did you mean ${near.join(" or ")}?` : "";
}
