/* A fake CUPTI (the callback API only) for tests without a GPU: one subscriber at a time, as
 * CUPTI before CUDA 13.3 allows; enabled callbacks of the runtime and driver domains delivered
 * synchronously on the calling thread, from the tracers the fake libcudart and libcuda call.
 * FAKE_CUPTI_BUSY=1 plays another tool already holding CUPTI. */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CBID 2048

static CUpti_CallbackFunc g_callback;
static void* g_userdata;
static int g_subscribed;
static unsigned char g_enabled[2][MAX_CBID]; /* [0] runtime, [1] driver */

static int slot(CUpti_CallbackDomain domain) {
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : -1;
}

static void tracer(CUpti_CallbackDomain domain, CUpti_CallbackId id, CUpti_ApiCallbackSite site,
                   CUcontext ctx, void* params, const void* ret, uint64_t* correlation) {
  const int s = slot(domain);
  if (!g_subscribed || s < 0 || id >= MAX_CBID || !g_enabled[s][id]) return;
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = "";
  d.functionParams = params;
  d.functionReturnValue = (void*)ret;
  d.context = ctx;
  d.correlationData = correlation;
  g_callback(g_userdata, domain, id, &d);
}

typedef void (*set_tracer)(void*);

/* Installs the tracer in each fake library the program has loaded. */
static int install(void* fn) {
  int found = 0;
  const char* libraries[][2] = {{"libcuda.so.1", "fake_cuda_set_tracer"},
                                {"libcudart.so.13", "fake_cudart_set_tracer"}};
  for (int i = 0; i < 2; ++i) {
    void* lib = dlopen(libraries[i][0], RTLD_NOW | RTLD_NOLOAD);
    set_tracer set = lib == NULL ? NULL : (set_tracer)dlsym(lib, libraries[i][1]);
    if (set != NULL) {
      set(fn);
      found = 1;
    }
  }
  return found;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  if (subscriber == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  if (g_subscribed || getenv("FAKE_CUPTI_BUSY") != NULL)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  g_callback = callback;
  g_userdata = userdata;
  if (!install((void*)tracer)) return CUPTI_ERROR_NOT_INITIALIZED;
  g_subscribed = 1;
  *subscriber = (CUpti_SubscriberHandle)&g_subscribed;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  (void)subscriber;
  g_subscribed = 0;
  install(NULL);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const int s = slot(domain);
  if (subscriber == NULL || s < 0 || id >= MAX_CBID) return CUPTI_ERROR_INVALID_PARAMETER;
  g_enabled[s][id] = enable != 0;
  return CUPTI_SUCCESS;
}

/* The fake libraries' contexts are their device's number plus one. */
CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* id) {
  if (context == NULL) return CUPTI_ERROR_INVALID_CONTEXT;
  *id = (uint32_t)((uintptr_t)context - 1);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** text) {
  switch (result) {
    case CUPTI_SUCCESS: *text = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED: *text = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    default: *text = "CUPTI_ERROR_UNKNOWN";
  }
  return CUPTI_SUCCESS;
}
