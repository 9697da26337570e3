package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/presenced/presenced/proto"
)

// presenced has Redis's default user alone: it may run every command on
// every key and channel, and its password is requirepass (none: nopass).
// ACL answers as Redis 7.0 answers about such a user, and refuses to
// create others.

// errNoACLFile is Redis's reply to ACL LOAD and ACL SAVE without an ACL
// file, which presenced never has.
const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

// errSetUser refuses ACL SETUSER.
const errSetUser = "ERR presenced has only the default user, whose password is requirepass"

// aclCategories are Redis 7.0's ACL categories, in ACL CAT's order.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection", "transaction", "scripting"}

func aclCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	switch sub.Name {
	case "whoami", "users":
		if sub.Name == "users" {
			c.out.Array(1)
		}
		c.out.BulkString("default")
	case "list":
		c.out.Array(1)
		c.out.BulkString("user default on " + strings.Join(c.passwordRules(), " ") + " ~* &* +@all")
	case "getuser":
		aclGetUser(c, args[2])
	case "cat":
		aclCat(c, args)
	case "genpass":
		aclGenPass(c, args)
	case "log":
		aclLogCommand(c, args)
	case "dryrun":
		aclDryRun(c, args)
	case "deluser":
		for _, name := range args[2:] {
			if string(name) == "default" {
				c.out.Error("ERR The 'default' user cannot be removed")
				return
			}
		}
		c.out.Int(0)
	case "load", "save":
		c.out.Error(errNoACLFile)
	case "setuser":
		c.out.Error(errSetUser)
	default:
		c.help("ACL",
			"CAT [<category>]", "    List all commands that belong to <category>, or all command categories", "    when no category is specified.",
			"DELUSER <username> [<username> ...]", "    Delete a list of users.",
			"DRYRUN <username> <command> [<arg> ...]", "    Returns whether the user can execute the given command without executing the command.",
			"GETUSER <username>", "    Get the user's details.",
			"GENPASS [<bits>]", "    Generate a secure 256-bit user password. The optional `bits` argument can", "    be used to specify a different size.",
			"LIST", "    Show users details in config file format.",
			"LOAD", "    Reload users from the ACL file.",
			"LOG [<count> | RESET]", "    Show the ACL log entries.",
			"SAVE", "    Save the current config to the ACL file.",
			"SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes.",
			"USERS", "    List all the registered usernames.",
			"WHOAMI", "    Return the current connection username.")
	}
}

// passwordRules are the default user's password rules as ACL LIST writes
// them: nopass, or the SHA-256 of requirepass.
func (c *client) passwordRules() []string {
	pass := c.s.settings.config().RequirePass
	if pass == "" {
		return []string{"nopass"}
	}
	sum := sha256.Sum256([]byte(pass))
	return []string{"#" + hex.EncodeToString(sum[:])}
}

// aclGetUser is ACL GETUSER: the default user's fields, a null for any
// other name.
func aclGetUser(c *client, name []byte) {
	if string(name) != "default" {
		c.out.Null()
		return
	}
	flags, passwords := []string{"on", "nopass"}, []string{}
	if rules := c.passwordRules(); rules[0] != "nopass" {
		flags, passwords = []string{"on"}, []string{rules[0][1:]}
	}
	c.out.Map(6)
	c.out.BulkString("flags")
	c.flagSet(flags)
	c.out.BulkString("passwords")
	c.out.Array(len(passwords))
	for _, p := range passwords {
		c.out.BulkString(p)
	}
	for _, kv := range [][2]string{{"commands", "+@all"}, {"keys", "~*"}, {"channels", "&*"}} {
		c.out.BulkString(kv[0])
		c.out.BulkString(kv[1])
	}
	c.out.BulkString("selectors")
	c.out.Array(0)
}

// flagSet writes flags as a set (RESP2: an array) of bulk strings, as
// Redis writes the flags of a user or of CLIENT TRACKINGINFO.
func (c *client) flagSet(flags []string) {
	c.out.Set(len(flags))
	for _, f := range flags {
		c.out.BulkString(f)
	}
}

// aclCat is ACL CAT [category]: the categories, or the commands and
// subcommands of presenced's in one.
func aclCat(c *client, args [][]byte) {
	switch len(args) {
	case 2:
		c.out.Array(len(aclCategories))
		for _, cat := range aclCategories {
			c.out.BulkString(cat)
		}
		return
	case 3:
	default:
		c.out.Error(proto.ErrSubcommandSyntax(args[1], "ACL"))
		return
	}
	cat := strings.ToLower(string(args[2]))
	if !slices.Contains(aclCategories, cat) {
		c.out.Error("ERR Unknown category '" + string(args[2]) + "'")
		return
	}
	var names []string
	add := func(s *proto.Spec) {
		if slices.Contains(s.Categories(), "@"+cat) {
			names = append(names, s.FullName())
		}
	}
	for _, spec := range proto.Commands {
		add(spec)
		for _, sub := range spec.Subcommands {
			add(sub)
		}
	}
	c.out.Array(len(names))
	for _, n := range names {
		c.out.BulkString(n)
	}
}

// aclGenPass is ACL GENPASS [bits]: that many random bits (256 unless
// given), in hexadecimal.
func aclGenPass(c *client, args [][]byte) {
	bits := int64(256)
	switch len(args) {
	case 2:
	case 3:
		n, ok := proto.ParseInt(args[2])
		if !ok {
			c.out.Error(proto.ErrNotInteger)
			return
		}
		if n <= 0 || n > 4096 {
			c.out.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		bits = n
	default:
		c.out.Error(proto.ErrSubcommandSyntax(args[1], "ACL"))
		return
	}
	chars := (bits + 3) / 4
	b := make([]byte, (chars+1)/2)
	rand.Read(b)
	c.out.BulkString(hex.EncodeToString(b)[:chars])
}

// aclDryRun is ACL DRYRUN user command [arg ...]: the default user may run
// any command presenced has, given a right number of arguments.
func aclDryRun(c *client, args [][]byte) {
	if string(args[2]) != "default" {
		c.out.Error("ERR User '" + string(args[2]) + "' not found")
		return
	}
	spec := proto.Lookup(args[3])
	if spec != nil && len(spec.Subcommands) > 0 && len(args) > 4 {
		spec = spec.Sub(args[4])
	}
	switch {
	case spec == nil:
		c.out.Error("ERR Command '" + string(args[3]) + "' not found")
	case !spec.CheckArity(len(args) - 3):
		c.out.Error(proto.ErrArity(spec.FullName()))
	default:
		c.out.OK()
	}
}

// aclLogGroupWindow is how close in time a failure must come to an entry
// like it to be counted in it, rather than start an entry of its own.
const aclLogGroupWindow = 60 * time.Second

// aclLogMaxLen is acllog-max-len's default: the entries kept.
const aclLogMaxLen = 128

// aclLogScan is how many of the newest entries a failure is compared
// with, as in Redis.
const aclLogScan = 10

// aclLogEntry is an ACL LOG entry: failed authentications as one user,
// by one command as sent (AUTH or HELLO), from one context, close
// together in time.
type aclLogEntry struct {
	count      int64
	context    string // "toplevel", or "multi" inside a transaction
	object     string
	username   string
	latest     time.Time
	clientInfo string // CLIENT INFO of the latest failure's client
}

// aclLog holds the ACL LOG entries, newest first. The only denials the
// default user meets are failed authentications.
type aclLog struct {
	mu      sync.Mutex
	entries []*aclLogEntry
}

// authFailed records a failed authentication of the client as username
// by cmd, AUTH or HELLO as the client spelled it.
func (l *aclLog) authFailed(c *client, cmd []byte, username string) {
	now := time.Now()
	context := "toplevel"
	if c.inExec {
		context = "multi"
	}
	l.add(&aclLogEntry{count: 1, context: context, object: string(cmd), username: username, latest: now, clientInfo: c.describe(now)})
}

// add counts e in the entry like it among the newest, which becomes the
// newest, or else adds it as an entry of its own.
func (l *aclLog) add(e *aclLogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, old := range l.entries[:min(len(l.entries), aclLogScan)] {
		if old.context == e.context && old.object == e.object && old.username == e.username && e.latest.Sub(old.latest) <= aclLogGroupWindow {
			old.count++
			old.latest, old.clientInfo = e.latest, e.clientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = old
			return
		}
	}
	l.entries = append([]*aclLogEntry{e}, l.entries[:min(len(l.entries), aclLogMaxLen-1)]...)
}

// aclLogCommand is ACL LOG [count|RESET]: the newest count entries (10 unless
// given), or none once RESET has emptied the log.
func aclLogCommand(c *client, args [][]byte) {
	l := &c.s.aclLog
	count := int64(10)
	switch {
	case len(args) > 3:
		c.out.Error(proto.ErrSubcommandSyntax(args[1], "ACL"))
		return
	case len(args) == 3 && strings.EqualFold(string(args[2]), "reset"):
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		c.out.OK()
		return
	case len(args) == 3:
		n, ok := proto.ParseInt(args[2])
		if !ok {
			c.out.Error(proto.ErrNotInteger)
			return
		}
		count = n
	}
	now := time.Now()
	l.mu.Lock()
	shown := l.entries[:max(0, min(int64(len(l.entries)), count))]
	c.out.Array(len(shown))
	for _, e := range shown {
		c.out.Map(7)
		c.out.BulkString("count")
		c.out.Int(e.count)
		for _, kv := range [][2]string{{"reason", "auth"}, {"context", e.context}, {"object", e.object}, {"username", e.username}} {
			c.out.BulkString(kv[0])
			c.out.BulkString(kv[1])
		}
		c.out.BulkString("age-seconds")
		c.out.Double(float64(now.Sub(e.latest).Milliseconds()) / 1000)
		c.out.BulkString("client-info")
		c.out.BulkString(strings.TrimSuffix(e.clientInfo, "\n"))
	}
	l.mu.Unlock()
}
