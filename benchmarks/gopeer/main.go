// The Go peer: a minimal controller-runtime operator doing the benchmarked work.
//
// It does what benchmarks/bench_operator.py does under both frameworks, and what
// benchmarks/bare.py does with no framework, so that the harness sees the same
// results: a finalizer on every object and status.create_fn on its creation,
// status.update_fn on every change of spec.field, and the finalizer's removal on
// deletion. The objects are unstructured (no generated types), watched in one
// namespace through controller-runtime's shared informer cache, and reconciled by
// its work queue: what a Go developer gets from the library with no tuning but
// the number of concurrent reconciliations.
//
// Usage (the harness passes the kubeconfig in $KUBECONFIG, or use --kubeconfig):
//
//	gopeer --namespace NS
//
// $KOPF_BENCH_PLURAL chooses the CRD; $BENCH_STATUS_SUBRESOURCE=1 says that its
// status is a subresource (patched apart from the finalizer, as the bound does).
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	group   = "bench.kopf.dev"
	version = "v1"
	// The most reconciliations in flight: the bound's limit of requests in flight (bare.CONNECTIONS).
	// controller-runtime's default is 1, which would serialize every object behind the previous one.
	defaultWorkers = 500
)

func main() {
	namespace := flag.String("namespace", "", "the namespace to watch (required)")
	workers := flag.Int("workers", defaultWorkers, "the most reconciliations in flight")
	flag.Parse() // --kubeconfig is registered by controller-runtime's config package
	if *namespace == "" {
		fmt.Fprintln(os.Stderr, "--namespace is required")
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(false)))
	if err := run(*namespace, *workers); err != nil {
		ctrl.Log.Error(err, "the operator failed")
		os.Exit(1)
	}
}

func run(namespace string, workers int) error {
	config, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	manager, err := ctrl.NewManager(config, ctrl.Options{
		// One namespace, as the Python sides watch it (kopf run -n NS).
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		// Without this, the client reads unstructured objects from the API server, not from the cache.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		// No metrics server (its default is :8080), no health probes, no leader election: none of the
		// other sides serves anything or takes a lease either.
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	plural := envOr("KOPF_BENCH_PLURAL", "benchmarkeds")
	gvk, err := manager.GetRESTMapper().KindFor(schema.GroupVersionResource{Group: group, Version: version, Resource: plural})
	if err != nil {
		return fmt.Errorf("the kind of %s.%s: %w", plural, group, err)
	}
	watched := &unstructured.Unstructured{}
	watched.SetGroupVersionKind(gvk)
	reconciler := newReconciler(manager.GetClient(), gvk, os.Getenv("BENCH_STATUS_SUBRESOURCE") == "1")
	err = ctrl.NewControllerManagedBy(manager).
		For(watched).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(reconciler)
	if err != nil {
		return err
	}
	ctrl.Log.Info("Starting", "kind", gvk.String(), "namespace", namespace, "workers", workers)
	// Stops on SIGINT or SIGTERM (the harness stops every side with SIGINT), then exits with 0.
	return manager.Start(ctrl.SetupSignalHandler())
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}
