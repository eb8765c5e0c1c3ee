package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
)

// promFlags are the flags that reach Prometheus, shared by every command
// that queries it (judge, serve): the URL, the credentials and the query
// timeout, read from the same flags, files and environment.
type promFlags struct {
	prometheus, bearerTokenFile, basicAuthUser, basicAuthPasswordFile, tenant string
	timeout                                                                   time.Duration
}

// register adds the flags, with timeout as --timeout's default.
func (f *promFlags) register(fs *flag.FlagSet, timeout time.Duration) {
	fs.StringVar(&f.prometheus, "prometheus", "http://127.0.0.1:9090", "Prometheus (or Mimir/Thanos) base URL; a user:password in it is used as basic auth and redacted in every output, but prefer --basic-auth-user")
	fs.StringVar(&f.bearerTokenFile, "bearer-token-file", "", "file holding a bearer token for Prometheus (else $"+envBearerToken+")")
	fs.StringVar(&f.basicAuthUser, "basic-auth-user", "", "basic-auth user for Prometheus; the password comes from --basic-auth-password-file or $"+envBasicAuthPassword)
	fs.StringVar(&f.basicAuthPasswordFile, "basic-auth-password-file", "", "file holding the basic-auth password (else $"+envBasicAuthPassword+")")
	fs.DurationVar(&f.timeout, "timeout", timeout, "timeout of each Prometheus query, its retries included (1s to 30m)")
	fs.StringVar(&f.tenant, "tenant", "", "tenant sent as the "+prom.TenantHeader+" header (Mimir, Cortex)")
}

func (f *promFlags) checkTimeout() error {
	if f.timeout < minTimeout || f.timeout > maxTimeout {
		return fmt.Errorf("--timeout %s is not between %s and %s", f.timeout, minTimeout, maxTimeout)
	}
	return nil
}

// newClient is the client of --prometheus, with the URL's own credentials
// only: the caller merges those of credentials().
func (f *promFlags) newClient() (*prom.Client, error) {
	client, err := prom.New(f.prometheus, f.timeout)
	if err != nil {
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	if hasControl(f.tenant) || len(f.tenant) > maxTenant {
		return nil, fmt.Errorf("--tenant must be at most %d characters, without control characters", maxTenant)
	}
	client.Tenant = strings.TrimSpace(f.tenant)
	return client, nil
}

// maxTenant is the longest tenant ID Mimir accepts.
const maxTenant = 150

// warnURLCredential warns, scrubbed, when --prometheus holds a credential.
func (f *promFlags) warnURLCredential(stderr io.Writer, scrub func(string) string) {
	if urlPassword(f.prometheus) != "" {
		fmt.Fprintln(stderr, scrub("pairwise: warning: --prometheus "+prom.RedactURL(f.prometheus)+" holds a credential, which process lists and shell history keep: prefer --basic-auth-user with $"+envBasicAuthPassword+" or --basic-auth-password-file"))
	}
}

// connect validates the flags and returns the authenticated client and a
// scrubber of every secret read; errors are already scrubbed.
func (f *promFlags) connect(stderr io.Writer) (*prom.Client, func(string) string, error) {
	scrub := newScrubber(urlSecrets(f.prometheus)...)
	creds, err := f.credentials()
	scrub = newScrubber(append(creds.Secrets(), urlSecrets(f.prometheus)...)...)
	if err == nil {
		err = f.checkTimeout()
	}
	var client *prom.Client
	if err == nil {
		client, err = f.newClient()
	}
	if err != nil {
		return nil, scrub, errors.New(scrub(oneLine(err.Error())))
	}
	client.Credentials = mergeCredentials(client.Credentials, creds)
	f.warnURLCredential(stderr, scrub)
	return client, scrub, nil
}

// mergeCredentials: the URL's user:password (set by prom.New) and the
// flags' credentials never both hold something (credentials refuses it).
func mergeCredentials(fromURL, fromFlags prom.Credentials) prom.Credentials {
	if fromFlags.IsZero() {
		return fromURL
	}
	return fromFlags
}

// credentials reads the Prometheus credentials of the judge and the server from its flags, files and
// environment, as Prometheus tooling does: a bearer token (file, else
// $PAIRWISE_BEARER_TOKEN) or basic auth (--basic-auth-user with a password
// from --basic-auth-password-file, else $PAIRWISE_BASIC_AUTH_PASSWORD). No
// error names a secret.
func (f *promFlags) credentials() (prom.Credentials, error) {
	var c prom.Credentials
	var err error
	tokenFrom := ""
	if f.bearerTokenFile != "" {
		if c.BearerToken, err = readSecretFile("--bearer-token-file", f.bearerTokenFile); err != nil {
			return prom.Credentials{}, err
		}
		tokenFrom = "--bearer-token-file"
	} else if v := strings.TrimSpace(os.Getenv(envBearerToken)); v != "" {
		c.BearerToken, tokenFrom = v, "$"+envBearerToken
	}
	if f.basicAuthPasswordFile != "" && f.basicAuthUser == "" {
		return prom.Credentials{}, errors.New("--basic-auth-password-file needs --basic-auth-user")
	}
	if f.basicAuthUser != "" {
		if strings.ContainsRune(f.basicAuthUser, ':') || hasControl(f.basicAuthUser) {
			return prom.Credentials{}, errors.New("--basic-auth-user must not hold a colon or a control character")
		}
		c.Username = f.basicAuthUser
		if f.basicAuthPasswordFile != "" {
			if c.Password, err = readSecretFile("--basic-auth-password-file", f.basicAuthPasswordFile); err != nil {
				return prom.Credentials{}, err
			}
		} else if c.Password = os.Getenv(envBasicAuthPassword); c.Password == "" {
			return prom.Credentials{}, fmt.Errorf("--basic-auth-user needs a password: set $%s or pass --basic-auth-password-file", envBasicAuthPassword)
		} else if hasControl(c.Password) {
			return prom.Credentials{}, fmt.Errorf("$%s holds a control character", envBasicAuthPassword)
		}
	}
	if c.BearerToken != "" && hasControl(c.BearerToken) {
		return prom.Credentials{}, fmt.Errorf("the bearer token of %s holds a control character", tokenFrom)
	}
	if c.BearerToken != "" && c.Username != "" {
		return prom.Credentials{}, fmt.Errorf("both a bearer token (%s) and basic auth (--basic-auth-user) are given: choose one", tokenFrom)
	}
	if u, perr := url.Parse(f.prometheus); perr == nil && u.User != nil && !c.IsZero() {
		what := "--basic-auth-user"
		if c.BearerToken != "" {
			what = "a bearer token (" + tokenFrom + ")"
		}
		return prom.Credentials{}, fmt.Errorf("--prometheus %s holds a user and %s is given too: pass the credentials once", prom.RedactURL(f.prometheus), what)
	}
	return c, nil
}
