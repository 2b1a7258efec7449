// The process's limit on open files bounds its connections. Raised from the soft limit to the hard one at start,
// which any process may do (Bun itself already does on Linux; done here too so it holds whatever runs svc), and
// reported in the start log line. Linux only: elsewhere the limit is left as it is and reported as unknown.
const RLIMIT_NOFILE = 7; // Linux, every architecture Bun runs on

export interface OpenFiles {
  soft: number;
  hard: number;
}

/** Raises the soft limit on open files to the hard limit where allowed; the limits after, or null where unknown. */
export function raiseOpenFileLimit(): OpenFiles | null {
  if (process.platform !== "linux") return null;
  try {
    const { dlopen, FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", {
      getrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
      setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    });
    try {
      // struct rlimit: two 64-bit words, soft then hard.
      const limits = new BigUint64Array(2);
      if (libc.symbols.getrlimit(RLIMIT_NOFILE, ptr(limits)) !== 0) return null;
      if (limits[0]! < limits[1]!) {
        const raised = new BigUint64Array([limits[1]!, limits[1]!]);
        if (libc.symbols.setrlimit(RLIMIT_NOFILE, ptr(raised)) === 0) limits[0] = limits[1]!;
      }
      return { soft: Number(limits[0]), hard: Number(limits[1]) };
    } finally {
      libc.close();
    }
  } catch {
    // No libc.so.6 (musl) or no FFI: the limit stays as the system set it.
    return null;
  }
}
