package hashslot

import "testing"

func TestCRC16CheckValue(t *testing.T) {
	// The check value of CRC-16/XMODEM, which Redis's crc16.c quotes.
	if got := crc16([]byte("123456789")); got != 0x31c3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
}

// TestOfMatchesHashTagRules checks the hash tag rules against the
// slots of the keys they reduce to; server's differential test compares
// Of with redis-server's CLUSTER KEYSLOT over many keys.
func TestOfMatchesHashTagRules(t *testing.T) {
	for _, c := range []struct{ key, hashed string }{
		{"{user1000}.following", "user1000"},
		{"foo{bar}{zap}", "bar"},
		{"a{b}c{", "b"},
		{"{}x", "{}x"},   // an empty tag: the whole key
		{"{x", "{x"},     // no closing brace
		{"x}{y", "x}{y"}, // no "}" after the "{"
		{"x}{y}", "y"},   // a "}" after it
		{"{{a}}", "{a"},  // the first "}" after the first "{"
	} {
		if got, want := Of([]byte(c.key)), int(crc16([]byte(c.hashed)))%Count; got != want {
			t.Errorf("Of(%q) = %d, want the slot of %q, %d", c.key, got, c.hashed, want)
		}
	}
	// Slots redis-server's CLUSTER KEYSLOT gives.
	for key, want := range map[string]int{"foo": 12182, "{user}x": 5474, "": 0, "123456789": 0x31c3 % Count} {
		if got := Of([]byte(key)); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
}
