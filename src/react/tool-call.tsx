import { useEffect, useRef, useState } from 'react';
import { TOOL_PROGRESS_TEXT, toolLabel, toolProgress } from './format.js';
import { liveOutputOf, type OutputPiece, type ToolCallPart, toolFailureText, toolOutputTruncated } from './messages.js';

/**
 * One tool call of an answer: its name in plain words and whether it is running, done or failed.
 * While the answer runs (`onStop` given), a command's preliminary result shows as live output.
 */
export function ToolCall({ part, onStop }: { part: ToolCallPart; onStop?: (() => void) | undefined }) {
  const progress = toolProgress(part, onStop !== undefined);
  const failure = progress === 'failed' ? toolFailureText(part) : undefined;
  const shortened = progress === 'done' && toolOutputTruncated(part);
  const live = onStop && liveOutputOf(part);
  return (
    <div className="mordn-tool" data-progress={progress}>
      <span className="mordn-tool-indicator" aria-hidden="true" />
      <span className="mordn-tool-name">{toolLabel(part.toolName)}</span>
      <span className="mordn-tool-progress">{TOOL_PROGRESS_TEXT[progress]}</span>
      {failure ? <span className="mordn-tool-error">{failure}</span> : null}
      {shortened ? <span className="mordn-tool-note">output shortened to fit</span> : null}
      {live && onStop ? <LiveOutput pieces={live} onStop={onStop} /> : null}
    </div>
  );
}

/** How often, at most, a screen reader hears the latest line of a running command. */
const ANNOUNCE_MS = 5_000;

/**
 * A running command's latest output: monospace, scrolled to its end, stderr told apart, with a
 * Stop beside it. Screen readers hear its latest line now and then, not the block on every update.
 */
function LiveOutput({ pieces, onStop }: { pieces: OutputPiece[]; onStop: () => void }) {
  const box = useRef<HTMLPreElement>(null);
  const spoken = useRef(0);
  const [said, setSaid] = useState('');
  const latest = pieces.at(-1)?.text.trimEnd().split('\n').at(-1) ?? '';
  useEffect(() => {
    box.current?.scrollTo?.(0, box.current.scrollHeight);
    if (!latest || Date.now() - spoken.current < ANNOUNCE_MS) return;
    spoken.current = Date.now();
    setSaid(`Output: ${latest}`);
  }, [latest]);
  return (
    <div className="mordn-live">
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must be reachable from the keyboard. */}
      <pre ref={box} className="mordn-live-output" role="log" aria-live="off" aria-label="Command output" tabIndex={0}>
        {pieces.map((piece, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: pieces only grow at the end and shift at the start.
          <span key={index} className={`mordn-live-${piece.stream}`}>
            {piece.text}
          </span>
        ))}
      </pre>
      <button type="button" className="mordn-button mordn-stop" onClick={onStop} aria-label="Stop running code">
        Stop
      </button>
      <p className="mordn-visually-hidden" aria-live="polite">
        {said}
      </p>
    </div>
  );
}
