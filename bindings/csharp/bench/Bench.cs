class B{static void Main(){}}
