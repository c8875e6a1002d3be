// Command gencerts writes a local CA and a serving certificate for
// localhost/127.0.0.1 into a directory (default certs/), unless a valid one
// is already there. `make certs` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/certs"
)

func main() {
	dir := flag.String("dir", "certs", "directory to write ca.crt, ca.key, tls.crt, tls.key to")
	hosts := flag.String("hosts", "localhost,127.0.0.1", "comma-separated DNS names and IPs for the serving certificate")
	validity := flag.Duration("validity", 365*24*time.Hour, "how long the certificates are valid")
	force := flag.Bool("force", false, "regenerate even if valid certificates exist")
	flag.Parse()

	hostList := strings.Split(*hosts, ",")
	if !*force && certs.Valid(*dir, hostList, 24*time.Hour) {
		fmt.Printf("certs: %s already holds a valid certificate for %s\n", *dir, *hosts)
		return
	}
	b, err := certs.Generate(hostList, *validity)
	if err == nil {
		err = b.Write(*dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("certs: wrote a local CA and a serving certificate for %s to %s\n", *hosts, *dir)
}
