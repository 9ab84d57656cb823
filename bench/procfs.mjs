// The server's processes as the host's /proc shows them: the process tree,
// PSS, the zygote. Shared by bench/bench.mjs and bench/image.mjs (where the
// container's processes are the host's too).
import { readdirSync, readFileSync } from 'node:fs';

// pid -> ppid of every process now (those that end meanwhile are skipped).
export function processTable() {
  const table = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      table.set(Number(entry), ppid);
    } catch {
      // ended between the listing and the read
    }
  }
  return table;
}

export function childrenOf(table, pid) {
  return [...table].filter(([, ppid]) => ppid === pid).map(([child]) => child);
}

export function descendantsOf(table, pid) {
  const out = [];
  for (let todo = childrenOf(table, pid); todo.length; ) {
    const p = todo.pop();
    out.push(p);
    todo.push(...childrenOf(table, p));
  }
  return out;
}

// A process's PSS (or another line of its smaps_rollup) in KiB; 0 if it has
// ended. Unreadable (not root) throws.
export function pssKiB(pid, field = 'Pss') {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ESRCH') return 0;
    throw new Error(`cannot read /proc/${pid}/smaps_rollup (${err.code}): run the bench as root`);
  }
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
  if (!m) throw new Error(`/proc/${pid}/smaps_rollup has no ${field}: line`);
  return Number(m[1]);
}

// The zygote: the server's child with __zygote in its command line; and the
// number of spares it keeps (its --spares=).
export function findZygote(serverPid) {
  for (const pid of childrenOf(processTable(), serverPid)) {
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!argv.includes('__zygote')) continue;
    const spares = argv.find((a) => a.startsWith('--spares='));
    return { pid, spares: spares === undefined ? null : Number(spares.slice('--spares='.length)) };
  }
  throw new Error(`no zygote (a child with __zygote in its command line) under the server, pid ${serverPid}`);
}
