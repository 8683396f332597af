// CoreDNS for the test cluster, with only the plugins its Corefile uses. CoreDNS documents this
// way of building a server with a chosen plugin set; it skips the cloud DNS providers the full
// build compiles in (minutes of build time on two cores), and there is no `forward` plugin, so a
// pod's lookup can never leave the cluster.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

// In the order of CoreDNS's plugin.cfg: the order plugins see a query.
var directives = []string{"ready", "health", "errors", "loadbalance", "cache", "kubernetes"}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
