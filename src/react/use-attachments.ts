import { useCallback, useEffect, useState } from 'react';
import { isAccepted, tooLargeMessage, unsupportedTypeMessage } from './format.js';
import type { Upload } from './messages.js';
import { parseProblem, uploadProblemMessage } from './problems.js';

/** Picker hints from `GET <api>?bootstrap`. The server decides again on every upload. */
export interface AttachmentFeatures {
  enabled: boolean;
  accept: string[];
  maxBytes: number;
}

/** What {@link useAttachments} gives the composer. */
export interface Attachments {
  /** The picker's hints once the bootstrap answered; undefined before (or when it failed). */
  features: AttachmentFeatures | undefined;
  /** Uploaded files waiting to go out with the next message. */
  pending: Upload[];
  uploading: boolean;
  /** One readable sentence per refused file, or a bootstrap failure. */
  problems: string[];
  upload: (files: File[]) => Promise<Upload[]>;
  remove: (storagePath: string) => void;
  /** Hands the pending files over (to a message being sent) and clears the list. */
  take: () => Upload[];
  /** Puts files handed over back in the list (those of a message the endpoint refused). */
  restore: (files: Upload[]) => void;
  dismissProblems: () => void;
}

const NO_HEADERS: Record<string, string> = {};

/**
 * Attachments for one chat endpoint: the picker's hints from `?bootstrap`, uploads (`POST <api>`,
 * one file per request, refused early when the hints already rule a file out) and the files
 * waiting for the next message.
 */
export function useAttachments(api: string, headers: Record<string, string> = NO_HEADERS): Attachments {
  const [features, setFeatures] = useState<AttachmentFeatures>();
  const [pending, setPending] = useState<Upload[]>([]);
  const [uploading, setUploading] = useState(false);
  const [problems, setProblems] = useState<string[]>([]);

  useEffect(() => {
    let current = true;
    fetch(`${api}?bootstrap`, { headers })
      .then((response) => (response.ok ? response.json() : undefined))
      .then((bootstrap) => {
        if (current) setFeatures(bootstrap?.features?.attachments);
      })
      .catch(() => {
        if (current) setProblems(['Attachments are unavailable right now.']);
      });
    return () => {
      current = false;
    };
  }, [api, headers]);

  const upload = useCallback(
    async (files: File[]) => {
      const accept = features?.accept ?? [];
      const refused: string[] = [];
      const uploaded: Upload[] = [];
      setProblems([]);
      setUploading(true);
      try {
        for (const file of files) {
          if (!isAccepted(file, accept)) {
            refused.push(unsupportedTypeMessage(file.name, accept));
            continue;
          }
          if (features && file.size > features.maxBytes) {
            refused.push(tooLargeMessage(file.name, features.maxBytes));
            continue;
          }
          const form = new FormData();
          form.set('file', file);
          const response = await fetch(api, { method: 'POST', body: form, headers });
          if (!response.ok) {
            const problem = parseProblem(await response.text());
            refused.push(uploadProblemMessage(file.name, response.status, problem, accept));
            continue;
          }
          uploaded.push(await response.json());
        }
      } catch {
        refused.push('The upload failed; check your connection and try again.');
      } finally {
        setPending((current) => [...current, ...uploaded]);
        setProblems(refused);
        setUploading(false);
      }
      return uploaded;
    },
    [api, features, headers],
  );

  const remove = useCallback((storagePath: string) => {
    setPending((current) => current.filter((file) => file.storagePath !== storagePath));
  }, []);

  const take = useCallback(() => {
    const taken = pending;
    setPending([]);
    return taken;
  }, [pending]);

  const restore = (files: Upload[]) => setPending((current) => [...files, ...current]);

  const dismissProblems = useCallback(() => setProblems([]), []);

  return { features, pending, uploading, problems, upload, remove, take, restore, dismissProblems };
}
