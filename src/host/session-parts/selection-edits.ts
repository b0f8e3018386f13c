/** Visual-selection edit requests: the replacement lines and their hunks (nothing is written), each cancellable. */
import type { ModelClient } from '../../agent/provider';
import { requestSelectionEdit } from '../../agent/selection-edit';
import { computeHunks, type ReviewHunk } from '../../workspace/review';

export type SelectionEditParams = {
  id: number;
  instruction: string;
  path?: string | null;
  filetype?: string | null;
  start_line: number;
  end_line: number;
  text: string;
  before?: string | null;
  after?: string | null;
};

export type SelectionEditResult = { cancelled: true } | { lines: string[]; hunks: ReviewHunk[] };

export class SelectionEdits {
  private readonly running = new Map<number, AbortController>();

  /** `client`: a client of the chat's current model. */
  constructor(private readonly client: () => ModelClient) {}

  async run(p: SelectionEditParams): Promise<SelectionEditResult> {
    const ac = new AbortController();
    this.running.set(p.id, ac);
    try {
      const replacement = await requestSelectionEdit(
        this.client(),
        { instruction: p.instruction, path: p.path ?? null, filetype: p.filetype ?? '', startLine: p.start_line, endLine: p.end_line, text: p.text, before: p.before ?? '', after: p.after ?? '' },
        ac.signal,
      );
      return { lines: replacement === '' ? [] : replacement.split('\n'), hunks: computeHunks(p.text === '' ? '' : p.text + '\n', replacement === '' ? '' : replacement + '\n') };
    } catch (e) {
      if (ac.signal.aborted) return { cancelled: true as const };
      throw e;
    } finally {
      this.running.delete(p.id);
    }
  }

  /** True when the request was still running. */
  cancel(id: number): boolean {
    const ac = this.running.get(id);
    ac?.abort();
    return !!ac;
  }

  dispose(): void {
    for (const ac of this.running.values()) ac.abort();
  }
}
