/* example-lifo: the smallest useful RRFP scheduler plug-in.
 *
 * One stack per scheduling context: the most recently readied task runs
 * first, on any idle worker that may execute it (task->workerids is
 * honoured through starpu_worker_can_execute_task_first_impl). Its state
 * lives on the context, as StarPU's own policies keep theirs, so two
 * contexts (or two runs) never share it. Load it with
 *   STARPU_SCHED_LIB=/path/librrfp_example_lifo.so STARPU_SCHED=example-lifo rrfp bench ...
 * See docs/plugins.md. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starpu_scheduler.h>

struct lifo
{
	pthread_mutex_t lock;
	struct starpu_task **stack;
	size_t depth, capacity;
	int nready; /* read without the lock on the idle pop path */
};

static void lifo_init(unsigned ctx)
{
	struct lifo *l = calloc(1, sizeof(*l));
	if (!l)
		abort();
	pthread_mutex_init(&l->lock, NULL);
	starpu_sched_ctx_set_policy_data(ctx, l);
	/* StarPU caps task->priority to the context's range at submission, and
	 * that range is [0, 0] unless the policy widens it: without this, a
	 * policy would see every RRFP task at priority 0 instead of -rank. */
	if (!starpu_sched_ctx_min_priority_is_set(ctx))
		starpu_sched_ctx_set_min_priority(ctx, INT_MIN);
	if (!starpu_sched_ctx_max_priority_is_set(ctx))
		starpu_sched_ctx_set_max_priority(ctx, INT_MAX);
}

static void lifo_deinit(unsigned ctx)
{
	struct lifo *l = starpu_sched_ctx_get_policy_data(ctx);
	pthread_mutex_destroy(&l->lock);
	free(l->stack);
	free(l);
	starpu_sched_ctx_set_policy_data(ctx, NULL);
}

/* Relax while waiting for our lock, so that others can wake this worker. */
static void lock_relaxed(struct lifo *l)
{
	starpu_worker_relax_on();
	pthread_mutex_lock(&l->lock);
	starpu_worker_relax_off();
}

static int lifo_push(struct starpu_task *task)
{
	struct lifo *l = starpu_sched_ctx_get_policy_data(task->sched_ctx);
	lock_relaxed(l);
	if (l->depth == l->capacity)
	{
		l->capacity = l->capacity ? 2 * l->capacity : 64;
		l->stack = realloc(l->stack, l->capacity * sizeof(*l->stack));
		if (!l->stack)
			abort();
	}
	l->stack[l->depth++] = task;
	__atomic_store_n(&l->nready, (int)l->depth, __ATOMIC_RELEASE);
	/* Before unlocking: nobody may pop the task before StarPU knows it was pushed. */
	starpu_push_task_end(task);
	pthread_mutex_unlock(&l->lock);

#ifndef STARPU_NON_BLOCKING_DRIVERS
	/* Blocking drivers sleep when idle: wake those that may run the task
	 * (read before unlocking in a real policy: once unlocked a worker may
	 * pop, run and free it). Non-blocking drivers poll pop, and waking
	 * them only costs time. */
	unsigned n = starpu_worker_get_count();
	for (unsigned w = 0; w < n; w++)
		if (starpu_worker_can_execute_task_first_impl(w, task, NULL))
			starpu_wake_worker_relax_light((int)w);
#endif
	return 0;
}

static struct starpu_task *lifo_pop(unsigned ctx)
{
	struct lifo *l = starpu_sched_ctx_get_policy_data(ctx);
	if (__atomic_load_n(&l->nready, __ATOMIC_ACQUIRE) == 0)
		return NULL; /* idle workers poll: keep this path lock-free */
	int w = starpu_worker_get_id();
	struct starpu_task *out = NULL;
	lock_relaxed(l);
	for (size_t i = l->depth; i-- > 0;)
		if (starpu_worker_can_execute_task_first_impl((unsigned)w, l->stack[i], NULL))
		{
			out = l->stack[i];
			memmove(l->stack + i, l->stack + i + 1, (l->depth - i - 1) * sizeof(*l->stack));
			l->depth--;
			break;
		}
	__atomic_store_n(&l->nready, (int)l->depth, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&l->lock);
	return out;
}

static struct starpu_sched_policy lifo_policy =
{
	.init_sched = lifo_init,
	.deinit_sched = lifo_deinit,
	.push_task = lifo_push,
	.pop_task = lifo_pop,
	.policy_name = "example-lifo",
	.policy_description = "example plug-in: a LIFO per context honouring workerids",
	.worker_type = STARPU_WORKER_LIST,
};

/* StarPU 1.4's plug-in entry point; RRFP uses the same convention on 1.3.
 * `name` is STARPU_SCHED (NULL when unset). */
struct starpu_sched_policy *starpu_get_sched_lib_policy(const char *name);
struct starpu_sched_policy *starpu_get_sched_lib_policy(const char *name)
{
	if (!name || strcmp(name, lifo_policy.policy_name) == 0)
		return &lifo_policy;
	return NULL;
}
