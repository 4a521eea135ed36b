'use server';

import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { SESSION_COOKIE, signSession, USER_ID } from '@/lib/session';

/** The demo's sign-in: any well-formed name. Your app would check a password, SSO, a magic link… */
export async function signIn(form: FormData): Promise<void> {
  const userId = String(form.get('user') ?? '').trim();
  if (!USER_ID.test(userId)) redirect('/?error=user');
  (await cookies()).set(SESSION_COOKIE, signSession(userId), {
    httpOnly: true,
    sameSite: 'lax',
    secure: process.env.NODE_ENV === 'production',
    path: '/',
  });
  redirect('/');
}

export async function signOut(): Promise<void> {
  (await cookies()).delete(SESSION_COOKIE);
  redirect('/');
}
