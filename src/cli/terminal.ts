/**
 * Text from a hive (subjects, bodies, names in log lines) is written by anyone; printed
 * raw, an ESC sequence in a subject could move the cursor, rewrite earlier lines, retitle
 * the window or hide itself. Every human-readable line the CLI prints from hive data
 * goes through `terminalText`: control characters become visible escapes (`\x1b`), as do
 * bidirectional overrides (which can make text read in an order it is not).
 */

// C0 controls but tab and newline, DEL, C1 controls, line/paragraph separators, bidi overrides and isolates.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escape(ch: string): string {
  const code = ch.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every character that could act on a terminal shown as an escape instead.
 * @example terminalText('hi\x1b[2J') // 'hi\\x1b[2J'
 */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, escape);
}

/** `terminalText` on one line: runs of whitespace (newlines too) become one space. */
export function terminalLine(text: string): string {
  return terminalText(text.replace(/[ \t\n]+/g, ' '));
}
