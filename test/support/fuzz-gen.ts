/**
 * Seeded generators shared by the property tests (workspace-fuzz, patch-property) and the fuzzing
 * stress suite (stress/fuzz.ts). All take the random source (see rng.ts), so a case can be replayed.
 */

export type Rand = () => number;

export const pickFrom = <T>(rand: Rand, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;

/** Words for random file text: indentation, a tab, non-ASCII, an empty word, code-ish tokens, a stray CR. */
export const FUZZ_WORDS = ['foo', 'bar', 'baz', 'qux', '  indent', '\tTab', 'ünï', '', 'x = 1;', '}', '{', 'return', '\r'];

/** 0–11 lines of 1–3 words; CRLF one time in five; usually a final line break. */
export function randomFuzzText(rand: Rand): string {
  const n = Math.floor(rand() * 12);
  const lines = Array.from({ length: n }, () => Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pickFrom(rand, FUZZ_WORDS)).join(' '));
  const eol = rand() < 0.2 ? '\r\n' : '\n';
  return lines.join(eol) + (rand() < 0.8 && n > 0 ? eol : '');
}

/** Deliberately nasty lines: repeats, blanks, padding, and text that looks like patch syntax. */
export const PATCH_VOCABULARY = [
  'a', 'b', 'c', 'a', 'b', '', '', '  indented', 'trailing  ', 'foo bar', '-- dash', '+plus', '--- a/x',
  '+++ b/x', '@@ -1 +1 @@', '\\ backslash', ' lead', '*** End Patch', '*** Update File: y', 'naïve “quote”', '\t',
];

export function randomLines(rand: Rand, max: number, vocabulary: readonly string[] = PATCH_VOCABULARY): string[] {
  const n = Math.floor(rand() * (max + 1));
  return Array.from({ length: n }, () => vocabulary[Math.floor(rand() * vocabulary.length)] as string);
}

/** 1–4 random deletions, insertions and replacements of a few lines. */
export function randomEdit(rand: Rand, lines: string[], vocabulary: readonly string[] = PATCH_VOCABULARY): string[] {
  const out = [...lines];
  const edits = 1 + Math.floor(rand() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(rand() * (out.length + 1));
    const r = rand();
    if (r < 0.35 && out.length > 0) out.splice(Math.min(at, out.length - 1), 1 + Math.floor(rand() * 3));
    else if (r < 0.7) out.splice(at, 0, ...randomLines(rand, 3, vocabulary));
    else out.splice(at, Math.floor(rand() * 3), ...randomLines(rand, 3, vocabulary));
  }
  return out;
}

export function joinLines(lines: string[], eol: string, finalNewline: boolean): string {
  if (lines.length === 0) return '';
  return lines.join(eol) + (finalNewline ? eol : '');
}
