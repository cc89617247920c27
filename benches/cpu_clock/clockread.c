// Cost of one clock read: the thread CPU clock (a system call) and the
// monotonic clock (vDSO), N reads each, best and worst of 5 rounds.
// policy::clock::thread_cpu makes the same call (libc, CLOCK_THREAD_CPUTIME_ID).
// Build and run: gcc -O2 -o /tmp/clockread benches/cpu_clock/clockread.c && /tmp/clockread
#include <stdio.h>
#include <time.h>
static double ns(struct timespec a, struct timespec b){return (b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec);}
int main(void){
  const int N=1000000; struct timespec t,a,b; volatile long sink=0;
  clockid_t ids[2]={CLOCK_THREAD_CPUTIME_ID,CLOCK_MONOTONIC}; const char*names[2]={"CLOCK_THREAD_CPUTIME_ID","CLOCK_MONOTONIC"};
  for(int k=0;k<2;k++){ double best=1e18, worst=0;
    for(int r=0;r<5;r++){ clock_gettime(CLOCK_MONOTONIC,&a);
      for(int i=0;i<N;i++){clock_gettime(ids[k],&t); sink+=t.tv_nsec;}
      clock_gettime(CLOCK_MONOTONIC,&b); double per=ns(a,b)/N; if(per<best)best=per; if(per>worst)worst=per;}
    printf("%-24s best %.0f ns/read, worst round %.0f ns/read (5 rounds of %d)\n",names[k],best,worst,N);}
  return 0;}
