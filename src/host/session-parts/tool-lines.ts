/**
 * The chat's line for each tool call: its summary when the call starts, its result (with a subagent's steps)
 * when it ends, and the one-time notice that commands are not sandboxed.
 */
import type { ToolResult } from '../../tools/tool';
import type { SubagentTranscript } from '../../agent/subagent';
import type { Sandbox } from '../../workspace/sandbox/sandbox';
import type { LuaUi } from '../lua-ui';
import { EVENTS } from '../protocol';
import { describeToolResult, summarizeToolCall, type ToolResultView } from '../summaries';

export interface ToolLinesOptions {
  ui: Pick<LuaUi, 'emit'>;
  sandbox: Pick<Sandbox, 'unavailable' | 'support'>;
  /** Stores the chat's view of a result with the session. */
  recordView(toolCallId: string, view: ToolResultView): void;
  notice(text: string): void;
}

export class ToolLines {
  private readonly callArgs = new Map<string, unknown>();
  /** Subagents' transcripts, until the call's line shows the child's steps. */
  private readonly transcripts = new Map<string, SubagentTranscript>();
  private sandboxNoticed = false;

  constructor(private readonly o: ToolLinesOptions) {}

  call(c: { id: string; name: string; args: unknown }): void {
    const { ui, sandbox } = this.o;
    this.callArgs.set(c.id, c.args);
    ui.emit(EVENTS.toolCall, { id: c.id, name: c.name, summary: summarizeToolCall(c.name, c.args) });
    if (c.name === 'bash' && sandbox.unavailable && !this.sandboxNoticed) {
      this.sandboxNoticed = true;
      this.o.notice(`commands are not sandboxed: ${sandbox.support.available ? '' : sandbox.support.reason}; every command asks (fix: ${sandbox.support.available ? '' : sandbox.support.fix}; see :checkhealth caboose)`);
    }
  }

  /** A subagent's transcript: kept for its call's line once the child is done. */
  transcript(t: SubagentTranscript): void {
    if (t.status !== 'running' && this.callArgs.has(t.toolCallId)) this.transcripts.set(t.toolCallId, t);
  }

  result(r: { id: string; name: string; result: ToolResult }): void {
    const { ui } = this.o;
    const view = describeToolResult(r.name, this.callArgs.get(r.id), r.result, this.transcripts.get(r.id));
    this.callArgs.delete(r.id);
    this.o.recordView(r.id, view);
    this.transcripts.delete(r.id);
    ui.emit(EVENTS.toolResult, { id: r.id, name: r.name, ok: r.result.ok, status: view.status, summary: view.summary, details: view.details });
    // A shell command may have changed files behind Neovim's back: clean buffers re-read them.
    if (r.name === 'bash') ui.emit(EVENTS.diskChanged, {});
  }
}
