/** Per-address counting is shared with the gateway's rate limits: one rule for what "an address" is. */
export { addressKey } from '@halo/kit/domain';
