// weft's monitoring page: the runs and each run's actions, live, from the server's own
// commands (POST /weft/service, docs/api.md). ES modules without a framework or a build step:
// the server embeds these files as they are (host/src/api/page.rs). Everything the server
// answers is put on the page as text (textContent), never as markup, so a log line or a name
// cannot inject anything. The map of the files: docs/ARCHITECTURE.md, "The web page".

import { route } from './router.js';

window.addEventListener('hashchange', () => route());
// A sign-in, a sign-out or a retry asks for the view again.
window.addEventListener('weft:route', () => route());
route();
