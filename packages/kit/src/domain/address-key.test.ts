import { addressKey, canonicalAddress } from './address-key';

describe('canonicalAddress', () => {
  it.each([
    ['10.66.0.1', '10.66.0.1'],
    ['::ffff:10.66.0.1', '10.66.0.1'],
    ['0:0:0:0:0:ffff:10.66.0.1', '10.66.0.1'],
    ['::FFFF:0a42:0001', '10.66.0.1'],
    ['::ffff:0.0.0.1', '0.0.0.1'],
    ['2001:0DB8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    ['::1', '::1'],
  ])('%s → %s', (text, canonical) => expect(canonicalAddress(text)).toBe(canonical));

  it.each(['010.066.000.001', '10.66.1', '0x0a.0.0.1', '::ffff:010.066.000.001', ' 10.66.0.1', '1:2:3', '', 'unknown'])(
    '%j is not an address written the standard way: null',
    (text) => expect(canonicalAddress(text)).toBeNull(),
  );

  it('four spellings of one address are one counter', () => {
    const keys = ['10.66.0.1', '::ffff:10.66.0.1', '0:0:0:0:0:ffff:10.66.0.1', '::ffff:a42:1'].map(addressKey);
    expect(new Set(keys)).toEqual(new Set(['10.66.0.1']));
    expect(addressKey('010.066.000.001')).toBe('unparsed');
  });
});
