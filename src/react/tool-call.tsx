import { TOOL_PROGRESS_TEXT, toolLabel, toolProgress } from './format.js';
import { type ToolCallPart, toolFailureText, toolOutputTruncated } from './messages.js';

/** One tool call of an answer: its name in plain words and whether it is running, done or failed. */
export function ToolCall({ part }: { part: ToolCallPart }) {
  const progress = toolProgress(part);
  const failure = progress === 'failed' ? toolFailureText(part) : undefined;
  const shortened = progress === 'done' && toolOutputTruncated(part);
  return (
    <div className="mordn-tool" data-progress={progress}>
      <span className="mordn-tool-indicator" aria-hidden="true" />
      <span className="mordn-tool-name">{toolLabel(part.toolName)}</span>
      <span className="mordn-tool-progress">{TOOL_PROGRESS_TEXT[progress]}</span>
      {failure ? <span className="mordn-tool-error">{failure}</span> : null}
      {shortened ? <span className="mordn-tool-note">output shortened to fit</span> : null}
    </div>
  );
}
