package proto

import (
	"errors"
	"strings"
)

// ArgType is the type of a command argument, as COMMAND DOCS names it.
type ArgType string

// Argument types. Key, Integer, Double, String, Pattern and UnixTime are
// values the client supplies; PureToken is a literal word with no value;
// OneOf is a choice between its members and Block a sequence of them.
const (
	ArgKey       ArgType = "key"
	ArgInteger   ArgType = "integer"
	ArgDouble    ArgType = "double"
	ArgString    ArgType = "string"
	ArgPattern   ArgType = "pattern"
	ArgUnixTime  ArgType = "unix-time"
	ArgPureToken ArgType = "pure-token"
	ArgOneOf     ArgType = "oneof"
	ArgBlock     ArgType = "block"
)

// Arg is one argument of a command, in the shape of an entry of the
// "arguments" list of Redis 7's COMMAND DOCS.
type Arg struct {
	// Name is the argument's name: the word of the synopsis ("seconds"),
	// the lower-case token of a pure token ("nx"), or a group's name.
	Name string
	// Type says what the argument is.
	Type ArgType
	// Token is the literal word that introduces the argument ("EX"), or
	// "" when there is none; a pure token's is its word, which may be
	// empty (MIGRATE's "").
	Token string
	// Optional is set when the argument may be left out.
	Optional bool
	// Multiple is set when the argument may be repeated.
	Multiple bool
	// MultipleToken is set when each repetition repeats the token too.
	MultipleToken bool
	// KeySpecIndex is, for a key, the index of its key specification
	// (keys in synopsis order); -1 for other arguments.
	KeySpecIndex int
	// Since is the version that added the argument, when it came after
	// the command (see Spec.ArgSince), and DeprecatedSince the version
	// that deprecated it.
	Since, DeprecatedSince string
	// Args are the members of a OneOf or Block.
	Args []Arg
}

// Flags lists the argument's flags as COMMAND DOCS does.
func (a *Arg) Flags() []string {
	var out []string
	if a.Optional {
		out = append(out, "optional")
	}
	if a.Multiple {
		out = append(out, "multiple")
	}
	if a.MultipleToken {
		out = append(out, "multiple_token")
	}
	return out
}

// Args returns the command's arguments, derived from its Syntax; nil when
// the command takes none. The command table's tests make sure every
// Syntax parses.
func (s *Spec) Args() []Arg {
	args, err := ParseSyntax(s.Syntax, s.FullName())
	if err != nil {
		return nil
	}
	s.dateArgs(args)
	return args
}

// dateArgs sets the Since and DeprecatedSince of the arguments, nested
// ones included, that ArgSince and ArgDeprecatedSince name.
func (s *Spec) dateArgs(args []Arg) {
	for i := range args {
		a := &args[i]
		key := a.Token
		if key == "" {
			key = a.Name
		}
		a.Since, a.DeprecatedSince = s.ArgSince[key], s.ArgDeprecatedSince[key]
		s.dateArgs(a.Args)
	}
}

// ErrSyntaxSynopsis is returned by ParseSyntax for a malformed synopsis.
var ErrSyntaxSynopsis = errors.New("proto: malformed command synopsis")

// ParseSyntax turns a synopsis in the notation of Redis's documentation
// into an argument tree. Lower-case words are arguments, upper-case words
// tokens; [x] is optional, <x> a required group, a | b a choice; "x [x
// ...]" is a repeated x, and "..." at the end of a group repeats the
// group. A token followed by an argument introduces it ("EX seconds");
// a group made of a token and several arguments is a block introduced by
// the token ("GET encoding offset"). cmd is the command's full name, which
// decides the few argument types the synopsis cannot tell.
func ParseSyntax(syntax, cmd string) ([]Arg, error) {
	sp := synParser{lex: lexSyntax(syntax)}
	alts, more, err := sp.alternatives(0)
	if err != nil {
		return nil, err
	}
	if more || sp.i != len(sp.lex) {
		return nil, ErrSyntaxSynopsis
	}
	b := argBuilder{cmd: cmd}
	var args []Arg
	switch len(alts) {
	case 0:
		return nil, nil
	case 1:
		args = b.sequence(alts[0])
	default:
		args = []Arg{b.oneOf(alts)}
	}
	keys := 0
	numberKeys(args, &keys, oneKeySpec[cmd])
	return args, nil
}

// oneKeySpec are the commands whose keys all fall in one key
// specification, a range, so that each has key_spec_index 0.
var oneKeySpec = map[string]bool{"lcs": true}

// synNode is a word or a group of the synopsis.
type synNode struct {
	word     string       // a word, when alts is nil
	alts     [][]*synNode // a group's alternatives
	optional bool         // [group] rather than <group>
	repeat   bool         // the group ends with "..."
}

// text renders the node in canonical form, to compare repetitions.
func (n *synNode) text() string {
	if n.alts == nil {
		return n.word
	}
	open, close := "<", ">"
	if n.optional {
		open, close = "[", "]"
	}
	var parts []string
	for _, alt := range n.alts {
		parts = append(parts, seqText(alt))
	}
	s := strings.Join(parts, " | ")
	if n.repeat {
		s += " ..."
	}
	return open + s + close
}

func seqText(seq []*synNode) string {
	parts := make([]string, len(seq))
	for i, n := range seq {
		parts[i] = n.text()
	}
	return strings.Join(parts, " ")
}

// emptyToken is the synopsis's word for an empty string given literally
// (MIGRATE's key "").
const emptyToken = `""`

// isToken reports whether n is a literal word (upper case, or "").
func (n *synNode) isToken() bool {
	return n.alts == nil && (strings.ToLower(n.word) != n.word || n.word == emptyToken)
}

// lexSyntax splits a synopsis into brackets, bars and words.
func lexSyntax(s string) []string {
	var out []string
	word := -1
	for i := 0; i <= len(s); i++ {
		c := byte(' ')
		if i < len(s) {
			c = s[i]
		}
		special := strings.IndexByte("[]<>|", c) >= 0
		if c == ' ' || special {
			if word >= 0 {
				out = append(out, s[word:i])
				word = -1
			}
			if special {
				out = append(out, s[i:i+1])
			}
		} else if word < 0 {
			word = i
		}
	}
	return out
}

type synParser struct {
	lex []string
	i   int
}

// alternatives reads "a b | c d" up to the closer (0 at top level) and
// reports whether it ended with "...".
func (p *synParser) alternatives(closer byte) ([][]*synNode, bool, error) {
	alts := [][]*synNode{nil}
	repeat := false
	for p.i < len(p.lex) {
		tok := p.lex[p.i]
		cur := &alts[len(alts)-1]
		if repeat && tok != string(closer) {
			return nil, false, ErrSyntaxSynopsis // "..." ends a group
		}
		p.i++
		switch tok {
		case "[", "<":
			n, err := p.group(tok == "[")
			if err != nil {
				return nil, false, err
			}
			*cur = append(*cur, n)
		case "]", ">":
			if closer == 0 || tok != string(closer) {
				return nil, false, ErrSyntaxSynopsis
			}
			p.i--
			return checkAlts(alts, repeat)
		case "|":
			if len(*cur) == 0 {
				return nil, false, ErrSyntaxSynopsis
			}
			alts = append(alts, nil)
		case "...":
			if closer == 0 || len(*cur) == 0 {
				return nil, false, ErrSyntaxSynopsis
			}
			repeat = true
		default:
			*cur = append(*cur, &synNode{word: tok})
		}
	}
	if closer != 0 {
		return nil, false, ErrSyntaxSynopsis // unclosed group
	}
	if len(alts) == 1 && len(alts[0]) == 0 {
		return nil, false, nil // no arguments
	}
	return checkAlts(alts, repeat)
}

func checkAlts(alts [][]*synNode, repeat bool) ([][]*synNode, bool, error) {
	if len(alts[len(alts)-1]) == 0 {
		return nil, false, ErrSyntaxSynopsis
	}
	return alts, repeat, nil
}

// group reads a group after its opening bracket, and the closing one.
func (p *synParser) group(optional bool) (*synNode, error) {
	closer := byte('>')
	if optional {
		closer = ']'
	}
	alts, repeat, err := p.alternatives(closer)
	if err != nil {
		return nil, err
	}
	p.i++ // the closer
	return &synNode{alts: alts, optional: optional, repeat: repeat}, nil
}

// groupNames are the names Redis's command documentation gives to groups
// that the synopsis leaves unnamed, keyed by the name derived from their
// members. Groups not listed are named after their members.
var groupNames = map[string]string{
	"nx_xx":       "condition",
	"nx_xx_gt_lt": "condition",
	"seconds_milliseconds_unix-time-seconds_unix-time-milliseconds_keepttl": "expiration",
	"seconds_milliseconds_unix-time-seconds_unix-time-milliseconds_persist": "expiration",
	"byte_bit":                              "index_unit",
	"start_end_index_unit":                  "index",
	"end_index_unit":                        "end_index",
	"start_end_index":                       "index",
	"async_sync":                            "async",
	"protover_username_password_clientname": "arguments",
	"encoding_offset_value_encoding_offset_increment": "write_operation",
	"wrap_sat_fail_write_operation":                   "write",
	"encoding_offset_write":                           "operation",
	"module-name_category_pattern":                    "filterby",
	"libname_libver":                                  "attr",
	"host_port_force":                                 "target",
	"normal_master_slave_replica_pubsub":              "normal_master_slave_pubsub",
	"client-id_normal_master_slave_pubsub_username_ip:port_ip:port_yes/no": "new-format",
	"ip:port_new-format":         "filter",
	"on_off":                     "status",
	"key_empty_string":           "key_or_empty_string",
	"password_username_password": "authentication",
	"yes_no":                     "mode",
	"write_all":                  "mode",
	"force_takeover":             "options",
	"host_port":                  "host-port",
	"no_one":                     "no-one",
	"host-port_no-one":           "args",
}

// commandGroupNames are the names of groups that depend on the command,
// where groupNames's would not do.
var commandGroupNames = map[string]string{
	"client|no-evict on_off":                         "enabled",
	"acl|log count_reset":                            "operation",
	"module|loadex name_value":                       "configs",
	"cluster|setslot node-id_node-id_node-id_stable": "subcommand",
}

// argTypes maps argument names to their types; names not listed are
// strings.
var argTypes = map[string]ArgType{
	"key": ArgKey, "key1": ArgKey, "key2": ArgKey, "destkey": ArgKey, "sourcekey": ArgKey, "newkey": ArgKey, "source": ArgKey, "destination": ArgKey,
	"pattern": ArgPattern,
	"seconds": ArgInteger, "milliseconds": ArgInteger, "offset": ArgInteger, "start": ArgInteger,
	"end": ArgInteger, "increment": ArgInteger, "decrement": ArgInteger, "count": ArgInteger,
	"index": ArgInteger, "index1": ArgInteger, "index2": ArgInteger, "db": ArgInteger,
	"destination-db": ArgInteger, "bits": ArgInteger, "cursor": ArgInteger, "protover": ArgInteger,
	"client-id": ArgInteger, "bit": ArgInteger, "port": ArgInteger, "numreplicas": ArgInteger,
	"ttl": ArgInteger, "frequency": ArgInteger, "slot": ArgInteger, "start-slot": ArgInteger,
	"end-slot": ArgInteger, "config-epoch": ArgInteger, "cluster_bus_port": ArgInteger,
}

// commandArgTypes are the types that depend on the command: "value" is a
// string for SET but an integer for SETBIT.
var commandArgTypes = map[string]ArgType{
	"setbit value":          ArgInteger,
	"bitfield value":        ArgInteger,
	"wait timeout":          ArgInteger,
	"migrate timeout":       ArgInteger,
	"incrbyfloat increment": ArgDouble,
	"lcs len":               ArgInteger,
	"client|pause timeout":  ArgInteger,
	"cluster|keyslot key":   ArgString,
}

// argBuilder turns parsed synopsis nodes into Args.
type argBuilder struct {
	cmd string
}

func (b *argBuilder) leafType(name string) ArgType {
	if t, ok := commandArgTypes[b.cmd+" "+name]; ok {
		return t
	}
	if strings.HasPrefix(name, "unix-time") {
		return ArgUnixTime
	}
	if t, ok := argTypes[name]; ok {
		return t
	}
	return ArgString
}

// unit is a run of synopsis nodes that forms one argument: a single node,
// or the nodes that "x y [x y ...]" repeats.
type unit struct {
	nodes    []*synNode
	multiple bool
}

// units groups a sequence into units, folding "x y [x y ...]" into one
// repeated unit.
func units(seq []*synNode) []unit {
	var out []unit
	for _, n := range seq {
		if rep := repeated(n); rep != nil && len(rep) <= len(out) {
			start := len(out) - len(rep)
			var prev []*synNode
			for _, u := range out[start:] {
				prev = append(prev, u.nodes...)
			}
			if len(prev) == len(rep) && seqText(prev) == seqText(rep) {
				out = append(out[:start], unit{nodes: prev, multiple: true})
				continue
			}
		}
		out = append(out, unit{nodes: []*synNode{n}})
	}
	return out
}

// repeated returns the repeated sequence of a "[x y ...]" group, or nil.
func repeated(n *synNode) []*synNode {
	if n.alts == nil || !n.optional || !n.repeat || len(n.alts) != 1 {
		return nil
	}
	return n.alts[0]
}

// isBareToken reports whether u is a single literal word.
func (u unit) isBareToken() bool {
	return !u.multiple && len(u.nodes) == 1 && u.nodes[0].isToken()
}

// sequence turns a sequence into its list of arguments, joining each token
// to the argument that follows it.
func (b *argBuilder) sequence(seq []*synNode) []Arg {
	us := units(seq)
	var out []Arg
	for i := 0; i < len(us); i++ {
		if !us[i].isBareToken() {
			out = append(out, b.unitArg(us[i]))
			continue
		}
		token := us[i].nodes[0].word
		if i+1 == len(us) || us[i+1].isBareToken() {
			out = append(out, pureToken(token))
			continue
		}
		i++
		a := b.unitArg(us[i])
		if a.Multiple && !a.MultipleToken && a.Type != ArgKey {
			// "ID client-id [client-id ...]": the token introduces a
			// block holding the repeated argument (but not keys, as in
			// MIGRATE's "KEYS key [key ...]").
			a = Arg{Name: strings.ToLower(token), Type: ArgBlock, Args: []Arg{a}}
		}
		a.Token = token
		out = append(out, a)
	}
	return out
}

func pureToken(token string) Arg {
	if token == emptyToken {
		return Arg{Name: "empty_string", Type: ArgPureToken}
	}
	return Arg{Name: strings.ToLower(token), Type: ArgPureToken, Token: token}
}

// unitArg is the argument a unit forms.
func (b *argBuilder) unitArg(u unit) Arg {
	a := b.single(u.nodes)
	if u.multiple {
		a.Multiple = true
		a.MultipleToken = u.nodes[0].isToken()
	}
	return a
}

// single turns a sequence into one argument: the argument itself when
// there is one, a block introduced by a leading token, or a block.
func (b *argBuilder) single(seq []*synNode) Arg {
	if len(seq) == 1 {
		return b.node(seq[0])
	}
	if us := units(seq); len(us) > 2 && us[0].isBareToken() && noBareTokens(us[1:]) {
		a := b.block(b.sequence(seq[1:]))
		a.Token = us[0].nodes[0].word
		return a
	}
	args := b.sequence(seq)
	if len(args) == 1 {
		return args[0]
	}
	return b.block(args)
}

func noBareTokens(us []unit) bool {
	for _, u := range us {
		if u.isBareToken() {
			return false
		}
	}
	return true
}

// node turns a word or a group into an argument.
func (b *argBuilder) node(n *synNode) Arg {
	if n.alts == nil {
		if n.isToken() {
			return pureToken(n.word)
		}
		return Arg{Name: n.word, Type: b.leafType(n.word)}
	}
	var a Arg
	if len(n.alts) == 1 {
		a = b.single(n.alts[0])
	} else {
		a = b.oneOf(n.alts)
	}
	if n.optional {
		a.Optional = true
	}
	if n.repeat {
		// A repeated group repeats the token that opens it.
		a.Multiple = true
		a.MultipleToken = a.Token != ""
	}
	return a
}

func (b *argBuilder) oneOf(alts [][]*synNode) Arg {
	members := make([]Arg, len(alts))
	for i, alt := range alts {
		members[i] = b.single(alt)
	}
	return b.group(ArgOneOf, members)
}

func (b *argBuilder) block(members []Arg) Arg {
	return b.group(ArgBlock, members)
}

// group builds a OneOf or Block named after its members, or as
// commandGroupNames or groupNames rename it.
func (b *argBuilder) group(t ArgType, members []Arg) Arg {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	name := strings.Join(names, "_")
	if n, ok := commandGroupNames[b.cmd+" "+name]; ok {
		name = n
	} else if n, ok := groupNames[name]; ok {
		name = n
	}
	return Arg{Name: name, Type: t, Args: members}
}

// numberKeys sets KeySpecIndex: keys are numbered in synopsis order, or
// all 0 when shared, the other arguments get -1.
func numberKeys(args []Arg, next *int, shared bool) {
	for i := range args {
		a := &args[i]
		a.KeySpecIndex = -1
		if a.Type == ArgKey {
			a.KeySpecIndex = *next
			if !shared {
				*next++
			}
		}
		numberKeys(a.Args, next, shared)
	}
}
