/** What a service's `domain/` builds on: ids, text and email rules, users, keyset pagination, client addresses. No I/O. */
export { addressKey, canonicalAddress, UNPARSED_ADDRESS } from './address-key';
export { emailAddress, isEmailAddress, normaliseEmail } from './email';
export { alignById, groupByKey, type IdRule, INVALID_ID, isIdText, parseId } from './ids';
export {
  type Connection,
  connectionArgs,
  type ConnectionArgs,
  type CursorCodec,
  DEFAULT_FIRST,
  idCursor,
  keysetConnection,
  MAX_FIRST,
  timeIdCursor,
  toConnection,
} from './keyset';
export { requiredText } from './text';
export { MAX_USER_NAME, type Role, type User, userName } from './users';
