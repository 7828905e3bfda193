/** What the launcher says when it cannot start (one line, no stack): `npm start` prints it as is. */
export class LaunchError extends Error {}
