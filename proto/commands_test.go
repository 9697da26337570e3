package proto

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// allSpecs lists every command and subcommand of the table.
func allSpecs() []*Spec {
	var out []*Spec
	for _, c := range Commands {
		out = append(out, c)
		out = append(out, c.Subcommands...)
	}
	return out
}

func TestCommandTableNames(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range Commands {
		if c.ID != i {
			t.Errorf("%s: ID %d, want %d", c.Name, c.ID, i)
		}
		if Lookup([]byte(strings.ToUpper(c.Name))) != c {
			t.Errorf("Lookup(%q) does not find the command", strings.ToUpper(c.Name))
		}
		for _, s := range c.Subcommands {
			if s.Parent != c || c.Sub([]byte(strings.ToUpper(s.Name))) != s {
				t.Errorf("%s: subcommand not linked to its parent", s.FullName())
			}
		}
	}
	for _, s := range allSpecs() {
		name := s.FullName()
		if seen[name] {
			t.Errorf("duplicate command %q", name)
		}
		seen[name] = true
		if s.Name == "" || s.Name != strings.ToLower(s.Name) || strings.ContainsAny(s.Name, " |") {
			t.Errorf("command name %q is not a lower-case word", s.Name)
		}
		if s.Summary == "" {
			t.Errorf("%s: no summary", name)
		}
	}
	if Lookup([]byte(strings.Repeat("x", 100))) != nil || Lookup(nil) != nil {
		t.Error("Lookup found a command that does not exist")
	}
}

func TestCommandTableArityAndFlags(t *testing.T) {
	for _, s := range allSpecs() {
		name := s.FullName()
		min := 1
		if s.Parent != nil {
			min = 2
		}
		if s.Arity == 0 || (s.Arity > 0 && s.Arity < min) || (s.Arity < 0 && -s.Arity < min) {
			t.Errorf("%s: arity %d", name, s.Arity)
		}
		if s.Flags&Write != 0 && s.Flags&ReadOnly != 0 {
			t.Errorf("%s: both write and readonly", name)
		}
	}
}

func TestCommandTableKeyPositions(t *testing.T) {
	for _, s := range allSpecs() {
		name := s.FullName()
		switch {
		case s.FirstKey == 0:
			if s.LastKey != 0 || s.Step != 0 {
				t.Errorf("%s: no first key but last key %d, step %d", name, s.LastKey, s.Step)
			}
		case s.FirstKey < 0 || s.Step <= 0:
			t.Errorf("%s: first key %d, step %d", name, s.FirstKey, s.Step)
		case s.LastKey != -1 && s.LastKey < s.FirstKey:
			t.Errorf("%s: last key %d before first key %d", name, s.LastKey, s.FirstKey)
		case s.Arity > 0 && (s.FirstKey >= s.Arity || s.LastKey >= s.Arity):
			t.Errorf("%s: key positions %d..%d beyond arity %d", name, s.FirstKey, s.LastKey, s.Arity)
		case s.Arity < 0 && s.FirstKey >= -s.Arity && s.Flags&PubSub == 0: // SUNSUBSCRIBE's shard channels are optional
			t.Errorf("%s: first key %d beyond the minimum arity %d", name, s.FirstKey, s.Arity)
		}
	}
}

// synWords is the least number of words an argument takes, and whether it
// may take more.
func synWords(a Arg) (min int, variable bool) {
	if a.Token != "" && a.Type != ArgPureToken {
		min++
	}
	switch a.Type {
	case ArgBlock:
		for _, m := range a.Args {
			n, v := synWords(m)
			min += n
			variable = variable || v
		}
	case ArgOneOf:
		// The member chosen is there, even one flagged optional (CLIENT
		// KILL's filters).
		least := -1
		for _, m := range a.Args {
			m.Optional = false
			n, v := synWords(m)
			if least < 0 || n < least {
				least = n
			}
			variable = variable || v || (least >= 0 && n != least)
		}
		min += least
	default:
		min++
	}
	if a.Optional {
		min, variable = 0, true
	}
	return min, variable || a.Multiple
}

// arityBelowSynopsis counts, for the commands whose arity lets out words
// their Redis 7.0 documentation requires, the words left out: PFMERGE
// of a destination alone merges no source into it (Redis 7.2 documents
// the sources as optional). A negative count is of words the arity asks
// for that the documentation leaves out: COMMAND GETKEYS documents no
// arguments but takes a command and one argument at least.
var arityBelowSynopsis = map[string]int{"pfmerge": 1, "command|getkeys": -2}

// TestCommandTableSyntax checks that every synopsis parses and agrees with
// the arity and the key positions.
func TestCommandTableSyntax(t *testing.T) {
	for _, s := range allSpecs() {
		name := s.FullName()
		args, err := ParseSyntax(s.Syntax, name)
		if err != nil {
			t.Errorf("%s: synopsis %q: %v", name, s.Syntax, err)
			continue
		}
		if s.Subcommands != nil || (s.Syntax == "" && s.Arity == -2) {
			continue // a container: its subcommands have the synopses
		}
		min := 1
		if s.Parent != nil {
			min = 2
		}
		variable := false
		var keyAt []int
		for _, a := range args {
			if !a.Optional && (a.Type == ArgKey || a.Type == ArgOneOf && a.Args[0].Type == ArgKey) {
				keyAt = append(keyAt, min) // a key, or MIGRATE's <key | "">
			}
			n, v := synWords(a)
			if a.Type == ArgBlock && a.Multiple && a.Args[0].Type == ArgKey && keyAt == nil {
				keyAt = append(keyAt, min)
			}
			min += n
			variable = variable || v
		}
		if s.Arity > 0 && (variable || min != s.Arity) {
			t.Errorf("%s: arity %d, but synopsis %q takes %d words (variable: %v)", name, s.Arity, s.Syntax, min, variable)
		}
		if s.Arity < 0 && min-arityBelowSynopsis[name] != -s.Arity {
			t.Errorf("%s: arity %d, but synopsis %q takes at least %d words", name, s.Arity, s.Syntax, min)
		}
		if s.Flags&PubSub != 0 && s.FirstKey > 0 && len(keyAt) == 0 && args[0].Name == "shardchannel" {
			continue // shard channels: where keys would be, as COMMAND INFO gives them, but no keys
		}
		if (len(keyAt) > 0) != (s.FirstKey > 0) || (len(keyAt) > 0 && keyAt[0] != s.FirstKey) {
			t.Errorf("%s: first key %d, but the synopsis %q has keys at %v", name, s.FirstKey, s.Syntax, keyAt)
		}
	}
}

// renderArgs prints an argument tree one argument a line: name, type,
// token, flags and (for keys) key_spec_index, indented by depth.
func renderArgs(b *strings.Builder, args []Arg, depth int) {
	for _, a := range args {
		fmt.Fprintf(b, "%s%s %s", strings.Repeat("  ", depth), a.Name, a.Type)
		if a.Token != "" {
			fmt.Fprintf(b, " token=%s", a.Token)
		}
		if f := a.Flags(); f != nil {
			fmt.Fprintf(b, " flags=%s", strings.Join(f, ","))
		}
		if a.KeySpecIndex >= 0 {
			fmt.Fprintf(b, " key_spec_index=%d", a.KeySpecIndex)
		}
		b.WriteByte('\n')
		renderArgs(b, a.Args, depth+1)
	}
}

// redisDocs holds the "arguments" of COMMAND DOCS as redis-server 7.0.15
// returns them (the "since" fields left out), rendered by renderArgs.
var redisDocs = []struct {
	cmd, want string
}{
	{cmd: "shutdown", want: `
nosave_save oneof flags=optional
  nosave pure-token token=NOSAVE
  save pure-token token=SAVE
now pure-token token=NOW flags=optional
force pure-token token=FORCE flags=optional
abort pure-token token=ABORT flags=optional
`},
	{cmd: "set", want: `
key key key_spec_index=0
value string
condition oneof flags=optional
  nx pure-token token=NX
  xx pure-token token=XX
get pure-token token=GET flags=optional
expiration oneof flags=optional
  seconds integer token=EX
  milliseconds integer token=PX
  unix-time-seconds unix-time token=EXAT
  unix-time-milliseconds unix-time token=PXAT
  keepttl pure-token token=KEEPTTL
`},
	{cmd: "bitcount", want: `
key key key_spec_index=0
index block flags=optional
  start integer
  end integer
  index_unit oneof flags=optional
    byte pure-token token=BYTE
    bit pure-token token=BIT
`},
	{cmd: "bitpos", want: `
key key key_spec_index=0
bit integer
index block flags=optional
  start integer
  end_index block flags=optional
    end integer
    index_unit oneof flags=optional
      byte pure-token token=BYTE
      bit pure-token token=BIT
`},
	{cmd: "expire", want: `
key key key_spec_index=0
seconds integer
condition oneof flags=optional
  nx pure-token token=NX
  xx pure-token token=XX
  gt pure-token token=GT
  lt pure-token token=LT
`},
	{cmd: "getex", want: `
key key key_spec_index=0
expiration oneof flags=optional
  seconds integer token=EX
  milliseconds integer token=PX
  unix-time-seconds unix-time token=EXAT
  unix-time-milliseconds unix-time token=PXAT
  persist pure-token token=PERSIST
`},
	{cmd: "bitfield", want: `
key key key_spec_index=0
operation oneof flags=optional,multiple
  encoding_offset block token=GET
    encoding string
    offset integer
  write block
    wrap_sat_fail oneof token=OVERFLOW flags=optional
      wrap pure-token token=WRAP
      sat pure-token token=SAT
      fail pure-token token=FAIL
    write_operation oneof
      encoding_offset_value block token=SET
        encoding string
        offset integer
        value integer
      encoding_offset_increment block token=INCRBY
        encoding string
        offset integer
        increment integer
`},
	{cmd: "bitfield_ro", want: `
key key key_spec_index=0
encoding_offset block token=GET flags=optional,multiple,multiple_token
  encoding string
  offset integer
`},
	{cmd: "bitop", want: `
operation string
destkey key key_spec_index=0
key key flags=multiple key_spec_index=1
`},
	{cmd: "mset", want: `
key_value block flags=multiple
  key key key_spec_index=0
  value string
`},
	{cmd: "copy", want: `
source key key_spec_index=0
destination key key_spec_index=1
destination-db integer token=DB flags=optional
replace pure-token token=REPLACE flags=optional
`},
	{cmd: "scan", want: `
cursor integer
pattern pattern token=MATCH flags=optional
count integer token=COUNT flags=optional
type string token=TYPE flags=optional
`},
	{cmd: "hello", want: `
arguments block flags=optional
  protover integer
  username_password block token=AUTH flags=optional
    username string
    password string
  clientname string token=SETNAME flags=optional
`},
	{cmd: "flushdb", want: `
async oneof flags=optional
  async pure-token token=ASYNC
  sync pure-token token=SYNC
`},
	{cmd: "auth", want: `
username string flags=optional
password string
`},
	{cmd: "setbit", want: `
key key key_spec_index=0
offset integer
value integer
`},
	{cmd: "info", want: `
section string flags=optional,multiple
`},
	{cmd: "client|list", want: `
normal_master_replica_pubsub oneof token=TYPE flags=optional
  normal pure-token token=NORMAL
  master pure-token token=MASTER
  replica pure-token token=REPLICA
  pubsub pure-token token=PUBSUB
id block token=ID flags=optional
  client-id integer flags=multiple
`},
	{cmd: "command|list", want: `
filterby oneof token=FILTERBY flags=optional
  module-name string token=MODULE
  category string token=ACLCAT
  pattern pattern token=PATTERN
`},
	{cmd: "config|set", want: `
parameter_value block flags=multiple
  parameter string
  value string
`},
	{cmd: "subscribe", want: `
channel string flags=multiple
`},
	{cmd: "unsubscribe", want: `
channel string flags=optional,multiple
`},
	{cmd: "punsubscribe", want: `
pattern pattern flags=optional,multiple
`},
	{cmd: "publish", want: `
channel string
message string
`},
	{cmd: "pubsub|channels", want: `
pattern pattern flags=optional
`},
	{cmd: "pubsub|numsub", want: `
channel string flags=optional,multiple
`},
	{cmd: "memory|usage", want: `
key key key_spec_index=0
count integer token=SAMPLES flags=optional
`},
}

func TestSyntaxMatchesRedisCommandDocs(t *testing.T) {
	for _, tc := range redisDocs {
		name, sub, _ := strings.Cut(tc.cmd, "|")
		spec := Lookup([]byte(name))
		if spec != nil && sub != "" {
			spec = spec.Sub([]byte(sub))
		}
		if spec == nil {
			t.Errorf("%s: not in the command table", tc.cmd)
			continue
		}
		args := spec.Args()
		var b strings.Builder
		renderArgs(&b, args, 0)
		if got, want := b.String(), strings.TrimPrefix(tc.want, "\n"); got != want {
			t.Errorf("%s: arguments\n%s\nwant (redis-server 7.0)\n%s", tc.cmd, got, want)
		}
	}
}

func TestParseSyntaxRejectsMalformed(t *testing.T) {
	for _, s := range []string{"[", "]", "a]", "[a", "<a]", "[a>", "a |", "| a", "[a | ]", "[]", "<>",
		"a ...", "[...]", "[a ... b]", "a [b] ...", "[a || b]"} {
		if args, err := ParseSyntax(s, "x"); err == nil {
			t.Errorf("ParseSyntax(%q) = %v, want an error", s, args)
		}
	}
	if args, err := ParseSyntax("", "x"); err != nil || args != nil {
		t.Errorf(`ParseSyntax("") = %v, %v; want no arguments`, args, err)
	}
}

// TestFlagNamesInRedisOrder checks flags against COMMAND INFO of
// redis-server 7.0.15, which lists them in a fixed order.
func TestFlagNamesInRedisOrder(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string
	}{
		{"subscribe", "pubsub noscript loading stale"},
		{"publish", "pubsub loading stale fast"},
		{"pubsub|numpat", "pubsub loading stale"},
		{"pubsub|help", "loading stale"},
		{"exec", "noscript loading stale skip_slowlog"},
		{"auth", "noscript loading stale fast no_auth allow_busy"},
		{"config|set", "admin noscript loading stale"},
		{"shutdown", "admin noscript loading stale no_multi allow_busy"},
	} {
		name, sub, _ := strings.Cut(tc.cmd, "|")
		spec := Lookup([]byte(name))
		if sub != "" {
			spec = spec.Sub([]byte(sub))
		}
		if got := strings.Join(spec.Flags.Names(), " "); got != tc.want {
			t.Errorf("%s: flags %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// TestEachKey checks the keys found at each command's key positions.
func TestEachKey(t *testing.T) {
	for _, tc := range []struct {
		call string
		want string
	}{
		{"getbit k 5", "k"},
		{"bitopcount and a b c", "a b c"},
		{"bitop and dest a b", "dest a b"},
		{"mset a 1 b 2", "a b"},
		{"ping", ""},
		{"history purge k", "k"},
	} {
		args := bytes.Fields([]byte(tc.call))
		spec := Lookup(args[0])
		if sub := spec.Sub(args[min(1, len(args)-1)]); len(spec.Subcommands) > 0 && sub != nil {
			spec = sub
		}
		var got []string
		spec.EachKey(args, func(key []byte) { got = append(got, string(key)) })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: keys %q, want %q", tc.call, got, tc.want)
		}
	}
}
