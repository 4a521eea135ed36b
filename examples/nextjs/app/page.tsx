import { randomUUID } from 'node:crypto';
import { MordnChat } from 'mordn/react';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { SESSION_COOKIE, verifySession } from '@/lib/session';
import { signIn, signOut } from './actions';

export default async function Home({ searchParams }: { searchParams: Promise<{ chat?: string; error?: string }> }) {
  const user = verifySession((await cookies()).get(SESSION_COOKIE)?.value);
  const { chat, error } = await searchParams;
  if (!user) {
    return (
      <main>
        <h1>Sign in</h1>
        <form action={signIn} className="sign-in">
          <label>
            Name <input name="user" required pattern="[A-Za-z0-9._\-]{1,64}" autoComplete="username" />
          </label>
          <button type="submit">Sign in</button>
        </form>
        {error ? <p className="problem">Use 1–64 letters, digits, dots, dashes or underscores.</p> : null}
      </main>
    );
  }
  // Each conversation has its own URL, so a reload (or a shared link) opens the same history.
  if (!chat) redirect(`/?chat=${randomUUID()}`);
  return (
    <main>
      <header>
        <span>Signed in as {user}</span>
        <form action={signOut}>
          <button type="submit">Sign out</button>
        </form>
      </header>
      <MordnChat key={chat} api="/api/chat" chatId={chat} resume />
    </main>
  );
}
