import type { UIMessageChunk } from 'ai';
import type { ArtifactCarrier } from './artifact-carrier.js';
import { artifactChunk } from './artifact-stream.js';
import { classifyLinkTarget, createLinkHoldback, findWorkspaceLinks, type WorkspaceLink } from './workspace-links.js';

/** What a link to a workspace file that could not become a download says instead. */
export const NOT_PUBLISHED_NOTE = '(file was not published)';

/** The most workspace files one answer publishes for its links; links past it get the note. */
export const MAX_LINK_PUBLICATIONS = 20;

/** What publishing a workspace file for a link came to. */
export type LinkPublication =
  | { kind: 'published'; carrier: ArtifactCarrier }
  /** No such regular file in the workspace. */
  | { kind: 'missing' }
  /** Not published for another reason: policy, limits, storage, no publish tool. */
  | { kind: 'refused' };

/**
 * How the guard reaches the user's workspace: whether there is one (asked without provisioning
 * one) and a live publish of one of its files, which yields a carrier only when it produced a
 * verified download.
 */
export interface WorkspaceFilePublisher {
  hasWorkspace(): Promise<boolean>;
  publish(path: string): Promise<LinkPublication>;
}

type TextDelta = Extract<UIMessageChunk, { type: 'text-delta' }>;
/** A path's publication in this answer; `shown` when the model's own publish already made its card. */
type Publication = LinkPublication | { kind: 'shown' } | undefined;

const PUBLISH_TOOL = 'sandbox_publish_file';

/** The workspace path a publish call's input names, as links name it. */
function publishedPath(input: unknown): string | undefined {
  const path = (input as { path?: unknown } | null)?.path;
  if (typeof path !== 'string') return undefined;
  const target = classifyLinkTarget(path);
  return target?.kind === 'relative' ? target.path : undefined;
}

/**
 * The step of the answer's stream that keeps links into the workspace from reaching the user
 * dead: a link to a file the user's workspace holds becomes its label plus a real file card (the
 * file published through `publisher`, once per path per answer); a link that cannot (missing
 * file, an escape or absolute path outside the workspace, no workspace, publish refused, no
 * sandbox at all) becomes its label and {@link NOT_PUBLISHED_NOTE}. A relative Markdown link is
 * the workspace's only when the file exists there; otherwise it is left as written. A link to a
 * file the model itself published earlier in the answer keeps its label and gets no second card.
 *
 * Text streams on at once except a possibly unfinished link span (at most 2 KiB, never past the
 * end of its line), and the stream's chunks are what is stored, so the stored answer is the
 * rewritten one.
 */
export function createLinkGuard(publisher: WorkspaceFilePublisher | undefined) {
  const holdbacks = new Map<string, ReturnType<typeof createLinkHoldback>>();
  const publications = new Map<string, Promise<Publication>>();
  const carded = new Set<string>();
  let workspaceKnown = false;
  // The model's own publish calls (id → path), and the one whose card may come next.
  const publishCalls = new Map<string, string>();
  let cardOf: string | undefined;

  /** The file's publication, or undefined when there is no workspace to publish from. */
  const publication = (path: string): Promise<Publication> => {
    let pending = publications.get(path);
    if (!pending) {
      pending = publications.size >= MAX_LINK_PUBLICATIONS ? Promise.resolve({ kind: 'refused' }) : publish(path);
      publications.set(path, pending);
    }
    return pending;
  };
  const publish = async (path: string): Promise<LinkPublication | undefined> => {
    if (!publisher) return undefined;
    // A workspace once seen stays; one not seen yet may be created by a later tool call.
    workspaceKnown ||= await publisher.hasWorkspace().catch(() => false);
    if (!workspaceKnown) return undefined;
    return publisher.publish(path).catch(() => ({ kind: 'refused' }) as const);
  };

  /** The text a link becomes, and the card that goes with it. */
  const resolve = async (link: WorkspaceLink, original: string) => {
    if (link.target.kind === 'outside') return { text: `${link.label} ${NOT_PUBLISHED_NOTE}`, card: undefined };
    const { path } = link.target;
    // An autolink or a bare URL is its own label: the file's path reads better.
    const bare = original === link.label || original === `<${link.label}>` || link.label.trim() === '';
    const label = bare ? path : link.label;
    const noted = { text: `${label} ${NOT_PUBLISHED_NOTE}`, card: undefined };
    const outcome = await publication(path);
    if (outcome?.kind === 'shown') return { text: label, card: undefined };
    if (outcome?.kind === 'published') {
      const first = !carded.has(path);
      carded.add(path);
      return { text: label, card: first ? artifactChunk(outcome.carrier) : undefined };
    }
    // A relative link to nothing in the workspace is not a workspace link after all.
    if (link.target.kind === 'relative' && outcome?.kind !== 'refused') return { text: original, card: undefined };
    return noted;
  };

  const rewrite = async (text: string, links: readonly WorkspaceLink[]) => {
    const cards: UIMessageChunk[] = [];
    let rewritten = '';
    let offset = 0;
    for (const link of links) {
      const resolved = await resolve(link, text.slice(link.start, link.end));
      rewritten += text.slice(offset, link.start) + resolved.text;
      offset = link.end;
      if (resolved.card) cards.push(resolved.card);
    }
    return { text: rewritten + text.slice(offset), cards };
  };

  const textDelta = (id: string, delta: string, providerMetadata: TextDelta['providerMetadata']): TextDelta => ({
    type: 'text-delta',
    id,
    delta,
    ...(providerMetadata ? { providerMetadata } : {}),
  });

  /**
   * `text` released by a holdback, as the chunks that carry it on: at once when it holds no
   * workspace link (nearly every delta, then passed on as `original` when that is all it is),
   * after their publications otherwise.
   */
  const release = (
    id: string,
    text: string,
    providerMetadata: TextDelta['providerMetadata'],
    original?: TextDelta,
  ): readonly UIMessageChunk[] | Promise<readonly UIMessageChunk[]> => {
    if (text === '') return [];
    const links = findWorkspaceLinks(text);
    if (links.length === 0) return [original?.delta === text ? original : textDelta(id, text, providerMetadata)];
    return rewrite(text, links).then(({ text: delta, cards }) =>
      delta === '' ? cards : [textDelta(id, delta, providerMetadata), ...cards],
    );
  };

  return {
    /**
     * What goes on in place of `chunk`: text with its links resolved, and their cards. A promise
     * only while a link's publication is pending; a delta that passes unchanged is passed as it is.
     */
    pass(chunk: UIMessageChunk): readonly UIMessageChunk[] | Promise<readonly UIMessageChunk[]> {
      switch (chunk.type) {
        case 'text-start':
          holdbacks.set(chunk.id, createLinkHoldback());
          return [chunk];
        case 'text-delta': {
          const holdback = holdbacks.get(chunk.id);
          return holdback ? release(chunk.id, holdback.push(chunk.delta), chunk.providerMetadata, chunk) : [chunk];
        }
        case 'text-end': {
          const holdback = holdbacks.get(chunk.id);
          holdbacks.delete(chunk.id);
          if (!holdback) return [chunk];
          const released = release(chunk.id, holdback.flush(), undefined);
          return Array.isArray(released)
            ? [...released, chunk]
            : (released as Promise<readonly UIMessageChunk[]>).then((out) => [...out, chunk]);
        }
        // A file the model published itself already has its card: a link to it gets no second one.
        case 'tool-input-available': {
          const path = chunk.toolName === PUBLISH_TOOL ? publishedPath(chunk.input) : undefined;
          if (path !== undefined) publishCalls.set(chunk.toolCallId, path);
          return [chunk];
        }
        case 'tool-output-available':
          cardOf = publishCalls.get(chunk.toolCallId);
          return [chunk];
        case 'file':
          if (cardOf !== undefined && !publications.has(cardOf))
            publications.set(cardOf, Promise.resolve({ kind: 'shown' }));
          cardOf = undefined;
          return [chunk];
        default:
          return [chunk];
      }
    },
  };
}
