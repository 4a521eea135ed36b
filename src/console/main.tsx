import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '../react/styles.css';
import './console.css';
import { App } from './app.js';
import { SessionRoot } from './session.js';

const container = document.getElementById('root');
if (container === null) throw new Error('The console page has no #root element.');

createRoot(container).render(
  <StrictMode>
    <SessionRoot>
      <App />
    </SessionRoot>
  </StrictMode>,
);
