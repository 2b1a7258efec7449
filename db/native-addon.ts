// libsql's native addon in the compiled binary: embedded as a file, and loaded from a copy in the first directory that
// lets a shared object be mapped executable. Bun would write it to $TMPDIR alone, and exit with a stack of minified
// source where $TMPDIR is mounted noexec (a common hardening); here /var/tmp and ~/.cache/svc are tried next, and
// when none allows it, one line says which variable to set.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

export function loadAddon(embedded: string): unknown {
  const bytes = new Uint8Array(require("node:fs").readFileSync(embedded));
  const dirs = [tmpdir(), "/var/tmp", join(homedir(), ".cache", "svc")];
  for (const dir of dirs) {
    const file = join(dir, `.svc-libsql-${process.pid}-${crypto.randomUUID().slice(0, 8)}.node`);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(file, bytes, { mode: 0o700 });
      chmodSync(file, 0o700);
      const module = { exports: {} as Record<string, unknown> };
      process.dlopen(module, file);
      return module.exports;
    } catch {
      // Not writable, or mounted noexec: the next one.
    } finally {
      // Once mapped, the file is no longer needed.
      rmSync(file, { force: true });
    }
  }
  process.stderr.write(
    `svc: cannot load its database driver: none of ${dirs.join(", ")} allows executables (mounted noexec?); set TMPDIR to a directory that does, e.g. TMPDIR=/var/lib/svc/tmp\n`,
  );
  process.exit(1);
}
