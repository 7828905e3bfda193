import { emailAddress } from './email';
import { requiredText } from './text';
import { userName } from './users';

const refused = (fn: () => unknown, message: string) => expect(fn).toThrow(expect.objectContaining({ kind: 'BAD_REQUEST', message }));

describe('field rules shared by every service', () => {
  it('requiredText trims, and names the field when missing, blank, not a string or too long', () => {
    expect(requiredText('  Kettle ', 'name', 10)).toBe('Kettle');
    for (const raw of [undefined, null, '', '   ', 42, ['x']]) refused(() => requiredText(raw, 'category', 10), 'category is required');
    refused(() => requiredText('x'.repeat(11), 'category', 10), 'category must be at most 10 characters');
    expect(requiredText('x'.repeat(10), 'category', 10)).toHaveLength(10);
  });

  it('userName is a required text of at most 100 characters', () => {
    expect(userName(' Rina ')).toBe('Rina');
    refused(() => userName(''), 'name is required');
    refused(() => userName('n'.repeat(101)), 'name must be at most 100 characters');
  });

  it('emailAddress normalises, then requires a valid address', () => {
    expect(emailAddress('  Alice@Example.COM ')).toBe('alice@example.com');
    refused(() => emailAddress(undefined), 'email is required');
    refused(() => emailAddress('   '), 'email is required');
    for (const raw of ['alice', 'alice@localhost', 'a b@example.com', `${'a'.repeat(250)}@x.io`])
      refused(() => emailAddress(raw), 'email is invalid');
  });
});
