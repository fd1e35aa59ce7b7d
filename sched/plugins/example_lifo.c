/* example-lifo: the smallest useful RRFP scheduler plug-in.
 *
 * One central stack: the most recently readied task runs first, on any idle
 * worker that may execute it (task->workerids is honoured through
 * starpu_worker_can_execute_task). Load it with
 *   RRFP_SCHED_LIB=/path/librrfp_example_lifo.so STARPU_SCHED=example-lifo rrfp bench ...
 * See docs/plugins.md. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starpu_scheduler.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct starpu_task **stack;
static size_t depth, capacity;
static int nready; /* read without the lock on the idle pop path */

static void lifo_init(unsigned ctx)
{
	(void)ctx;
	depth = 0;
	__atomic_store_n(&nready, 0, __ATOMIC_RELEASE);
}

static void lifo_deinit(unsigned ctx)
{
	(void)ctx;
	free(stack);
	stack = NULL;
	depth = capacity = 0;
}

static int lifo_push(struct starpu_task *task)
{
	/* Relax while waiting for our lock so that workers can be woken. */
	starpu_worker_relax_on();
	pthread_mutex_lock(&lock);
	starpu_worker_relax_off();
	if (depth == capacity)
	{
		capacity = capacity ? 2 * capacity : 64;
		stack = realloc(stack, capacity * sizeof(*stack));
		if (!stack)
			abort();
	}
	stack[depth++] = task;
	__atomic_store_n(&nready, (int)depth, __ATOMIC_RELEASE);
	/* Before unlocking: nobody may pop the task before StarPU knows it was pushed. */
	starpu_push_task_end(task);
	pthread_mutex_unlock(&lock);

#ifndef STARPU_NON_BLOCKING_DRIVERS
	/* Blocking drivers sleep when idle: wake those that may run the task.
	 * Non-blocking drivers poll pop, and waking them only costs time. */
	unsigned n = starpu_worker_get_count();
	for (unsigned w = 0; w < n; w++)
		if (starpu_worker_can_execute_task_first_impl(w, task, NULL))
			starpu_wake_worker_relax_light((int)w);
#endif
	return 0;
}

static struct starpu_task *lifo_pop(unsigned ctx)
{
	(void)ctx;
	if (__atomic_load_n(&nready, __ATOMIC_ACQUIRE) == 0)
		return NULL; /* idle workers poll: keep this path lock-free */
	int w = starpu_worker_get_id();
	struct starpu_task *out = NULL;
	starpu_worker_relax_on();
	pthread_mutex_lock(&lock);
	starpu_worker_relax_off();
	for (size_t i = depth; i-- > 0;)
		if (starpu_worker_can_execute_task_first_impl((unsigned)w, stack[i], NULL))
		{
			out = stack[i];
			memmove(stack + i, stack + i + 1, (depth - i - 1) * sizeof(*stack));
			depth--;
			break;
		}
	__atomic_store_n(&nready, (int)depth, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	return out;
}

static struct starpu_sched_policy lifo_policy =
{
	.init_sched = lifo_init,
	.deinit_sched = lifo_deinit,
	.push_task = lifo_push,
	.pop_task = lifo_pop,
	.policy_name = "example-lifo",
	.policy_description = "example plug-in: central LIFO honouring workerids",
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
