/**
 * Locating a run of patch lines inside a file, growing more lenient in stages.
 *
 * Stages, tried in order (a stricter stage always wins over a looser one):
 *   1. `exact`        lines equal byte for byte
 *   2. `trim_end`     trailing whitespace ignored (this also absorbs CRLF vs LF)
 *   3. `trim`         leading and trailing whitespace ignored
 *   4. `unicode`      as `trim`, plus typographic punctuation mapped to ASCII
 *                     (dashes, quotes, non-breaking and other exotic spaces)
 *
 * Pure: no I/O, no state. Used for both `@@ context` header lines and chunk bodies.
 */

export type SeekStage = 'exact' | 'trim_end' | 'trim' | 'unicode';

export const SEEK_STAGES: readonly SeekStage[] = ['exact', 'trim_end', 'trim', 'unicode'];

export interface SeekOptions {
  /** First index a match may start at (default 0). */
  start?: number;
  /** The chunk is anchored at the end of the file: try the last possible position first. */
  eof?: boolean;
  /**
   * Preferred start index (a unified diff's line number). Within a stage, the match closest to the
   * hint wins instead of the first one.
   */
  hint?: number;
}

export interface SeekMatch {
  index: number;
  stage: SeekStage;
}

const PUNCTUATION_MAP: ReadonlyMap<string, string> = new Map([
  // dashes and minus
  ...['\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', '\uFE58', '\uFE63', '\uFF0D'].map(
    (c): [string, string] => [c, '-'],
  ),
  // single quotes, primes
  ...['\u2018', '\u2019', '\u201A', '\u201B', '\u2032', '\uFF07'].map((c): [string, string] => [c, "'"]),
  // double quotes, double primes, guillemets are left alone (they are not quote substitutes in code)
  ...['\u201C', '\u201D', '\u201E', '\u201F', '\u2033', '\uFF02'].map((c): [string, string] => [c, '"']),
  // spaces
  ...[
    '\u00A0', '\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008',
    '\u2009', '\u200A', '\u202F', '\u205F', '\u3000',
  ].map((c): [string, string] => [c, ' ']),
  // ellipsis
  ['\u2026', '...'],
]);

const PUNCTUATION_RE = new RegExp(`[${[...PUNCTUATION_MAP.keys()].join('')}]`, 'g');

/** Maps typographic punctuation and exotic spaces to ASCII, then trims. */
export function normalizePunctuation(line: string): string {
  return line.replace(PUNCTUATION_RE, (c) => PUNCTUATION_MAP.get(c) ?? c).trim();
}

const NORMALIZERS: Record<SeekStage, (line: string) => string> = {
  exact: (s) => s,
  trim_end: (s) => s.trimEnd(),
  trim: (s) => s.trim(),
  unicode: normalizePunctuation,
};

/**
 * Finds where `pattern` occurs in `lines`, trying each stage in turn.
 * - An empty pattern matches at `start` (or at the end with `eof`).
 * - With `eof`, the end-anchored position is tried first (all stages), then the normal search.
 * Returns undefined when no stage matches.
 */
export function seekSequence(
  lines: readonly string[],
  pattern: readonly string[],
  options: SeekOptions = {},
): SeekMatch | undefined {
  const start = Math.max(0, options.start ?? 0);
  if (pattern.length === 0) {
    return { index: options.eof ? lines.length : Math.min(start, lines.length), stage: 'exact' };
  }
  const last = lines.length - pattern.length;
  if (last < start) return undefined;

  const matcher = (stage: SeekStage): ((i: number) => boolean) => {
    const norm = NORMALIZERS[stage];
    const wanted = pattern.map(norm);
    const cache = new Map<number, string>();
    const lineAt = (i: number): string => {
      let v = cache.get(i);
      if (v === undefined) {
        v = norm(lines[i] as string);
        cache.set(i, v);
      }
      return v;
    };
    return (i) => {
      for (let j = 0; j < wanted.length; j++) if (lineAt(i + j) !== wanted[j]) return false;
      return true;
    };
  };

  // End-anchored: the last possible position, at any stage, beats a match elsewhere.
  if (options.eof) {
    for (const stage of SEEK_STAGES) if (matcher(stage)(last)) return { index: last, stage };
  }

  for (const stage of SEEK_STAGES) {
    const matchesAt = matcher(stage);
    if (options.hint === undefined) {
      for (let i = start; i <= last; i++) if (matchesAt(i)) return { index: i, stage };
    } else {
      // Walk outwards from the hint; at equal distance the earlier position wins.
      const hint = Math.min(Math.max(options.hint, start), last);
      for (let d = 0; hint - d >= start || hint + d <= last; d++) {
        if (hint - d >= start && matchesAt(hint - d)) return { index: hint - d, stage };
        if (d > 0 && hint + d <= last && matchesAt(hint + d)) return { index: hint + d, stage };
      }
    }
  }
  return undefined;
}
