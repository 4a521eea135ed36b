import type { Metadata } from 'next';
import type { ReactNode } from 'react';
import 'mordn/react/styles.css';
import './globals.css';

export const metadata: Metadata = { title: 'Mordn chat' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
