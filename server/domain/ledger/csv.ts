// RFC 4180 CSV: written by export_group, read by the Splitwise import.

const NEEDS_QUOTES = /[",\r\n]/;
// A spreadsheet runs a cell starting with one of these as a formula; other agents' text must not become one.
const FORMULA_START = /^[=+\-@\t\r]/;

/** One field; text the service did not write itself (`untrustedText`) is defused against spreadsheet formulas. */
export function csvField(value: string | number | null, untrustedText = false): string {
  let text = value === null ? "" : String(value);
  if (untrustedText && FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Rows joined with CRLF, each line ending with one, as RFC 4180 has it. */
export const csvLines = (rows: string[][]) => rows.map((r) => `${r.join(",")}\r\n`).join("");

/** Parses CSV text (quoted fields, doubled quotes, CRLF or LF); returns rows with the 1-based line each starts on. */
export function parseCsv(text: string): { line: number; fields: string[] }[] {
  const rows: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = "";
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; // byte order mark
  const endRow = () => {
    fields.push(field);
    rows.push({ line: rowLine, fields });
    fields = [];
    field = "";
  };
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
      } else {
        if (c === "\n") line++;
        field += c;
      }
    } else if (c === '"' && field === "") {
      quoted = true;
    } else if (c === ",") {
      fields.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      endRow();
      line++;
      rowLine = line;
    } else {
      field += c;
    }
  }
  if (quoted) throw new Error(`CSV: a quoted field opened on line ${rowLine} is never closed`);
  if (field !== "" || fields.length) endRow();
  return rows;
}
