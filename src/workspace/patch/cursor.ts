/** Line cursor and error helper shared by the envelope and unified-diff parsers. */
import { ToolError } from '../errors';

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

export class Cursor {
  constructor(
    readonly lines: readonly string[],
    public i: number,
    public end: number,
  ) {}
  get done(): boolean {
    return this.i >= this.end;
  }
  /** Current line (only valid when not done). */
  get line(): string {
    return this.lines[this.i] as string;
  }
  at(i: number): string | undefined {
    return i < this.end ? this.lines[i] : undefined;
  }
  /** 1-based line number of the current line in the text as given. */
  get lineNo(): number {
    return this.i + 1;
  }
}

export function parseError(lineNo: number, message: string, path?: string): ToolError {
  return new ToolError('patch_parse_error', `line ${lineNo}: ${message}`, path === undefined ? {} : { path });
}

