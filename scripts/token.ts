// npm run -s token: the token command, which lives in server/token.ts so that the release (npm run build) carries
// it as plain JavaScript too (node server/token.js).
import '../server/token.js';
