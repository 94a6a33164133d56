// JSON Lines framing: lines split anywhere (inside a UTF-8 character too), CRLF, the bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LineSplitter, encodeLine } from '../../src/framing';

test('lines come whole whatever the chunking', () => {
  const text = Buffer.from('{"a":"é"}\r\n{"b":2}\n{"c":"日本"}\n');
  for (let cut = 0; cut <= text.length; cut++) {
    for (let cut2 = cut; cut2 <= text.length; cut2 += 3) {
      const s = new LineSplitter();
      const lines = [...s.push(text.subarray(0, cut)), ...s.push(text.subarray(cut, cut2)), ...s.push(text.subarray(cut2))];
      assert.deepEqual(lines, ['{"a":"é"}', '{"b":2}', '{"c":"日本"}'], `cut at ${cut}/${cut2}`);
    }
  }
});

test('an unfinished line over the bound is refused, naming it', () => {
  const s = new LineSplitter(8);
  assert.throws(() => s.push(Buffer.from('0123456789')), /exceeded 8 bytes/);
  assert.deepEqual(s.push(Buffer.from('ok\n')), ['ok']);
});

test('an envelope is one line', () => {
  assert.equal(encodeLine({ v: 1, text: 'a\nb' }), '{"v":1,"text":"a\\nb"}\n');
});
