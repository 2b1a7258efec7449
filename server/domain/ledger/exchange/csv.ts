// RFC 4180 CSV: written by export_group, read by the Splitwise import.

// Spreadsheets split on "," or ";" (by locale) or tab, whatever the file means: a cell holding any separator, a
// quote or a line break is quoted, so every reader that honours quotes keeps it whole.
const NEEDS_QUOTES = /[",;\t\r\n]/;
// A spreadsheet runs a cell starting with = + - @, tab or CR as a formula (OWASP, CSV injection). A reader that splits
// on another separator than ours starts a cell after each ";" or tab in our text, where our quotes mean nothing to it:
// "Taxi;=1+1;" is a cell "=1+1" there. So each place any reader may start a cell gets the guard.
const FORMULA_AT_CELL_START = /(?<=^|[,;\t\r\n])(?=[=+\-@\t\r])/g;
// What formatAmount writes: a number, which a spreadsheet must read as one (a refund's "-12.50" included).
const AMOUNT = /^-?\d+(\.\d+)?$/;

/**
 * One text cell. Every cell but amounts goes through here, whoever wrote its text (members' descriptions and notes,
 * but also ids, handles, categories and states): a ' goes before each formula start, and a guarded cell is quoted.
 */
export function csvField(value: string | null): string {
  const text = value ?? "";
  const guarded = text.replace(FORMULA_AT_CELL_START, "'");
  return guarded !== text || NEEDS_QUOTES.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

/** An amount cell: formatAmount's text as it is; anything else is refused, so no text gets past the guard as one. */
export function csvAmount(text: string): string {
  if (!AMOUNT.test(text)) throw new TypeError(`csvAmount: not a formatted amount: ${JSON.stringify(text)}`);
  return text;
}

/** Cells (already csvField or csvAmount) as one line ending with CRLF, as RFC 4180 has it. */
export const csvLine = (cells: string[]) => `${cells.join(",")}\r\n`;

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
