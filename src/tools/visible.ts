/**
 * Text made visible for an approval (issue 18, item 13): what the user approves must show everything
 * that will run or be sent. Control characters (a carriage return that hides a line's start, escape
 * sequences, NUL), invisible format characters (zero-width spaces, bidirectional overrides) and line
 * separators other than "\n" are shown as `^M`, `<U+202E>`…; "\n" and tabs stay as they are.
 */
export function makeVisible(s: string): string {
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/gu, (c) => {
    const code = c.codePointAt(0)!;
    if (code < 0x20) return `^${String.fromCharCode(code + 0x40)}`;
    if (code === 0x7f) return '^?';
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}

/** Header names whose values are credentials: masked in approvals and logs. */
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie)$|api[-_]?key|token|secret|password|passwd|session|credential|auth/i;

/** A header value as the approval shows it: secrets masked, keeping the scheme and a hint of the length. */
export function maskHeaderValue(name: string, value: string): string {
  if (!SECRET_HEADER.test(name)) return makeVisible(value);
  const scheme = /^(Bearer|Basic|Token|Digest)\s+/i.exec(value)?.[0] ?? '';
  const rest = value.slice(scheme.length);
  return `${scheme}•••• (masked, ${rest.length} characters)`;
}

/**
 * A shell command as the approval float shows it: every line, numbered when there are several, with a
 * first line saying how many lines (and blank ones) there are, control characters visible.
 */
export function commandDisplay(command: string): string {
  const lines = command.split('\n');
  if (lines.length === 1) return `$ ${makeVisible(command)}`;
  const blank = lines.filter((l) => l.trim() === '').length;
  const w = String(lines.length).length;
  const head = `command of ${lines.length} lines${blank ? ` (${blank} blank)` : ''}; every line runs:`;
  return [head, ...lines.map((l, i) => `${String(i + 1).padStart(w)}│ ${makeVisible(l)}`)].join('\n');
}
