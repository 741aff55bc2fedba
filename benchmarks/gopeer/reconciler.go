package main

import (
	"context"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const finalizer = "bench.kopf.dev/gopeer"

// reconciler brings one object at a time to its handled state, with one merge patch per step
// (two for the creation when status is a subresource), like the bound.
type reconciler struct {
	client            client.Client
	gvk               schema.GroupVersionKind
	statusSubresource bool

	// What was already written, per object. The cache may still hold the version before our own
	// patch when the echo of an earlier patch reconciles the object again; without this memory,
	// such a stale read would write the same result twice. The bound keeps the same memory.
	mu       sync.Mutex
	handled  map[types.NamespacedName]any // spec.field as last handled
	released map[types.NamespacedName]bool
}

func newReconciler(c client.Client, gvk schema.GroupVersionKind, statusSubresource bool) *reconciler {
	return &reconciler{
		client: c, gvk: gvk, statusSubresource: statusSubresource,
		handled: map[types.NamespacedName]any{}, released: map[types.NamespacedName]bool{},
	}
}

func (r *reconciler) Reconcile(ctx context.Context, request ctrl.Request) (ctrl.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.gvk)
	if err := r.client.Get(ctx, request.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) { // gone: nothing to do, nothing to remember
			r.forget(request.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.release(ctx, request.NamespacedName, obj)
	}
	field, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "field")
	handled, known := r.lastHandled(request.NamespacedName)
	if !known {
		if _, created, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "create_fn"); !created {
			return ctrl.Result{}, r.create(ctx, request.NamespacedName, obj, field)
		}
		handled, _, _ = unstructured.NestedFieldNoCopy(obj.Object, "status", "handled", "field")
	}
	if !reflect.DeepEqual(field, handled) {
		return ctrl.Result{}, r.update(ctx, request.NamespacedName, obj, field)
	}
	return ctrl.Result{}, nil
}

// create adds the finalizer and writes the create handler's result (status.create_fn).
func (r *reconciler) create(ctx context.Context, name types.NamespacedName, obj *unstructured.Unstructured,
	field any) error {
	r.remember(name, field)
	before := obj.DeepCopy()
	// With the status subresource, the finalizer goes first: a status patch ignores metadata.
	// (It is there already only when a status patch failed after it, and is being retried.)
	if controllerutil.AddFinalizer(obj, finalizer) && r.statusSubresource {
		if err := r.client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			return r.failed(name, err)
		}
		before = obj.DeepCopy()
	}
	setStatus(obj, "create_fn", map[string]any{"message": "created"}, field)
	return r.failed(name, r.patchStatus(ctx, obj, before))
}

// update writes the update handler's result (status.update_fn) for a new value of spec.field.
func (r *reconciler) update(ctx context.Context, name types.NamespacedName, obj *unstructured.Unstructured,
	field any) error {
	r.remember(name, field)
	before := obj.DeepCopy()
	setStatus(obj, "update_fn", map[string]any{"field": field}, field)
	return r.failed(name, r.patchStatus(ctx, obj, before))
}

// release removes the finalizer of an object being deleted, once.
func (r *reconciler) release(ctx context.Context, name types.NamespacedName, obj *unstructured.Unstructured) error {
	r.mu.Lock()
	done := r.released[name]
	r.released[name] = true
	r.mu.Unlock()
	if done || !controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	before := obj.DeepCopy()
	controllerutil.RemoveFinalizer(obj, finalizer)
	err := client.IgnoreNotFound(r.client.Patch(ctx, obj, client.MergeFrom(before)))
	if err != nil {
		r.mu.Lock()
		delete(r.released, name) // to be tried again when the work queue retries
		r.mu.Unlock()
	}
	return err
}

func (r *reconciler) patchStatus(ctx context.Context, obj *unstructured.Unstructured, before *unstructured.Unstructured) error {
	patch := client.MergeFrom(before)
	if r.statusSubresource {
		return r.client.Status().Patch(ctx, obj, patch)
	}
	return r.client.Patch(ctx, obj, patch) // the finalizer and the status in one patch
}

// setStatus puts a handler's result and the field it handled into the object's status.
func setStatus(obj *unstructured.Unstructured, key string, result map[string]any, field any) {
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	status[key] = result
	status["handled"] = map[string]any{"field": field}
	obj.Object["status"] = status
}

func (r *reconciler) lastHandled(name types.NamespacedName) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	field, known := r.handled[name]
	return field, known
}

func (r *reconciler) remember(name types.NamespacedName, field any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handled[name] = field
}

// failed forgets what a failed patch did not write, so that the work queue's retry writes it.
func (r *reconciler) failed(name types.NamespacedName, err error) error {
	if err != nil {
		r.forget(name)
	}
	return err
}

func (r *reconciler) forget(name types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.handled, name)
	delete(r.released, name)
}
